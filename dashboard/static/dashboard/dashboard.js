// A live entry names the placeholders it replaces (the empty feed's note, a message's waiting bubble):
// they are removed when the page has them, so a live update never aims at an element that is not there
// (what htmx's out-of-band deletes did, with a console error each time).
document.addEventListener("htmx:load", (event) => {
  const root = event.detail.elt;
  if (!(root instanceof Element)) return;
  const named = root.matches("[data-removes]") ? [root] : [];
  for (const element of [...named, ...root.querySelectorAll("[data-removes]")]) {
    for (const id of element.dataset.removes.split(" ").filter(Boolean)) {
      document.getElementById(id)?.remove();
    }
  }
});
