"""README is a map and the manual lives in docs/: README stays short, and every relative link of
README.md and docs/*.md leads somewhere (a file that exists; an #anchor names a heading of the
linked markdown file, as GitHub spells its anchors)."""

import re
from pathlib import Path

from tests.conftest import REPO_ROOT

README_MAX_LINES = 220
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def test_readme_is_a_map_not_the_manual():
    lines = (REPO_ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines < README_MAX_LINES, f"README.md has {lines} lines; the manual belongs in docs/"


def test_every_environment_variable_settings_reads_is_in_the_operations_manual():
    settings = (REPO_ROOT / "fathom" / "settings.py").read_text(encoding="utf-8")
    variables = set(re.findall(r'env_[a-z_]+\(\s*"([A-Z][A-Z0-9_]+)"', settings))
    manual = (REPO_ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert len(variables) > 40
    assert sorted(v for v in variables if f"`{v}`" not in manual) == []


def test_every_relative_link_of_readme_and_docs_resolves():
    assert broken_links(documents()) == []


def test_a_broken_link_or_anchor_is_found(tmp_path):
    (tmp_path / "target.md").write_text("# A title\n\n## The `fathom up` stack\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[ok](target.md#the-fathom-up-stack) [ok](#here) [web](https://example.com)\n\n# Here\n\n"
                    "[gone](missing.md) [no anchor](target.md#nowhere) [self](#nowhere)\n"
                    "```\n[in code](ignored.md)\n```\n", encoding="utf-8")
    assert broken_links([page]) == ["page.md: missing.md", "page.md: target.md#nowhere", "page.md: #nowhere"]


def documents() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def broken_links(paths: list[Path]) -> list[str]:
    broken = []
    for path in paths:
        for target in links(path.read_text(encoding="utf-8")):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...: not a file of the repository
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists() or (anchor and anchor not in anchors(linked)):
                broken.append(f"{path.name}: {target}")
    return broken


def links(markdown: str) -> list[str]:
    prose = INLINE_CODE.sub("", FENCE.sub("", markdown))
    return LINK.findall(prose)


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a markdown file's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated one numbered -1, -2, ..."""
    if path.suffix != ".md":
        return set()
    found: dict[str, int] = {}
    names = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#* *$", FENCE.sub("", path.read_text(encoding="utf-8")),
                              re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        names.add(f"{slug}-{found[slug]}" if slug in found else slug)
        found[slug] = found.get(slug, 0) + 1
    return names
