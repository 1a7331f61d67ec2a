"""The file tools' two path spaces, called as their tasks call them: fs:// stays inside the
workspace's folder whatever the path (a corpus of traversal attempts: 0 escapes), writes are atomic;
managed:// maps to profile fields, keeps every replaced value, and sessions keep their copies until
RefreshProfile."""

import os
import threading
from pathlib import Path

import pytest

from harness.runtime import profiles
from harness.runtime.files import FileError, file_list, file_read, file_replace, file_write, sandbox
from harness.runtime.models import ProfileFieldVersion, Trigger
from harness.runtime.services import session_create, trigger_enqueue
from tests.harness.support import session_tick

pytestmark = pytest.mark.django_db

SECRET = "the secret outside the sandbox"


@pytest.fixture
def fs_root(tmp_path, settings):
    settings.FATHOM_FS_ROOT = tmp_path / "root"
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(SECRET)
    return tmp_path


@pytest.fixture
def home(fs_root, workspace) -> Path:
    """The workspace's folder, with notes/todo.md in it."""
    root = sandbox.workspace_root(workspace)
    (root / "notes").mkdir()
    (root / "notes" / "todo.md").write_text("- buy milk\n- call Ada\n")
    return root


def write(workspace, path, content, allow_override=False):
    return file_write(workspace=workspace, path=path, content=content, allow_override=allow_override,
                      replaced_by="test")


def replace(workspace, path, old, new, mode):
    return file_replace(workspace=workspace, path=path, old=old, new=new, mode=mode, replaced_by="test")


# --- fs:// ------------------------------------------------------------------------------------------------

def test_fs_list_shows_a_folders_entries_with_their_kind_and_size(workspace, home):
    (home / "notes" / "sub").mkdir()
    listed = file_list(workspace=workspace, path="fs://notes")
    assert listed["path"] == "fs://notes"
    assert listed["entries"] == [{"name": "sub", "type": "dir", "size": None},
                                 {"name": "todo.md", "type": "file", "size": 22}]
    assert [e["name"] for e in file_list(workspace=workspace, path="fs://")["entries"]] == ["notes"]


def test_fs_read_returns_the_text(workspace, home):
    assert file_read(workspace=workspace, path="fs://notes/todo.md") == "- buy milk\n- call Ada\n"
    assert file_read(workspace=workspace, path="fs://./notes//todo.md") == "- buy milk\n- call Ada\n"


def test_fs_write_creates_folders_refuses_to_override_unless_allowed_and_leaves_no_temp_file(workspace, home):
    assert write(workspace, "fs://new/deep/a.txt", "one") == "wrote 3 bytes to fs://new/deep/a.txt"
    with pytest.raises(FileError, match="exists; pass allow_override=true"):
        write(workspace, "fs://new/deep/a.txt", "two")
    assert (home / "new" / "deep" / "a.txt").read_text() == "one"
    write(workspace, "fs://new/deep/a.txt", "two", allow_override=True)
    assert (home / "new" / "deep" / "a.txt").read_text() == "two"
    assert os.listdir(home / "new" / "deep") == ["a.txt"]


def test_a_write_is_atomic_readers_see_the_old_or_the_new_content_never_a_mix(workspace, home):
    old, new = "a" * 200_000, "b" * 200_000
    write(workspace, "fs://big.txt", old)
    seen, stop = set(), threading.Event()

    def reader():
        while not stop.is_set():
            seen.add(frozenset((home / "big.txt").read_text()))

    thread = threading.Thread(target=reader)
    thread.start()
    for index in range(30):
        write(workspace, "fs://big.txt", new if index % 2 == 0 else old, allow_override=True)
    stop.set()
    thread.join()
    assert seen <= {frozenset("a"), frozenset("b")}


def test_a_write_canceled_before_it_lands_changes_nothing(workspace, home):
    def canceled():
        raise RuntimeError("canceled")

    with pytest.raises(RuntimeError):
        sandbox.fs_write(workspace=workspace, path="fs://notes/todo.md", content="x", allow_override=True,
                         before_commit=canceled)
    assert (home / "notes" / "todo.md").read_text() == "- buy milk\n- call Ada\n"
    assert sorted(os.listdir(home / "notes")) == ["todo.md"]


@pytest.mark.parametrize("mode, expected, said", [
    ("first", "x b x b", "replaced 1 match(es)"),
    ("all", "x b x b", None),
])
def test_fs_replace_first_and_all(workspace, home, mode, expected, said):
    write(workspace, "fs://r.txt", "a b a b")
    message = replace(workspace, "fs://r.txt", "a", "x", mode)
    text = file_read(workspace=workspace, path="fs://r.txt")
    if mode == "first":
        assert text == "x b a b" and message.startswith(said)
    else:
        assert text == expected and message.startswith("replaced 2 match(es)")


def test_fs_replace_one_needs_exactly_one_match_and_says_how_many_matched(workspace, home):
    write(workspace, "fs://r.txt", "a b a b")
    with pytest.raises(FileError, match="old matched 2 times, and mode one needs exactly one match"):
        replace(workspace, "fs://r.txt", "a", "x", "one")
    with pytest.raises(FileError, match="old matched 0 times"):
        replace(workspace, "fs://r.txt", "zzz", "x", "one")
    assert replace(workspace, "fs://r.txt", "a b a", "y", "one").startswith("replaced 1 match(es)")
    assert file_read(workspace=workspace, path="fs://r.txt") == "y b"
    with pytest.raises(FileError, match="mode must be first, all or one"):
        replace(workspace, "fs://r.txt", "y", "x", "some")


def test_oversized_reads_and_writes_are_refused_naming_the_limit(workspace, home, settings):
    settings.FATHOM_FS_MAX_READ_BYTES = 10
    settings.FATHOM_FS_MAX_WRITE_BYTES = 10
    with pytest.raises(FileError, match="22 bytes, more than the 10 bytes a read may take"):
        file_read(workspace=workspace, path="fs://notes/todo.md")
    with pytest.raises(FileError, match="content is 11 bytes, more than the 10 bytes a write may take"):
        write(workspace, "fs://x.txt", "x" * 11)


def test_binary_files_folders_and_missing_files_are_refused_clearly(workspace, home):
    (home / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(FileError, match="not UTF-8 text"):
        file_read(workspace=workspace, path="fs://bin")
    with pytest.raises(FileError, match="is a folder, not a file"):
        file_read(workspace=workspace, path="fs://notes")
    with pytest.raises(FileError, match="does not exist"):
        file_read(workspace=workspace, path="fs://notes/nothing.md")
    with pytest.raises(FileError, match="is not a folder"):
        file_list(workspace=workspace, path="fs://notes/todo.md")


def test_each_workspace_has_its_own_folder(workspace, other_workspace, home):
    write(other_workspace, "fs://notes/todo.md", "theirs")
    assert file_read(workspace=workspace, path="fs://notes/todo.md") == "- buy milk\n- call Ada\n"
    assert file_read(workspace=other_workspace, path="fs://notes/todo.md") == "theirs"
    assert sandbox.workspace_root(workspace) != sandbox.workspace_root(other_workspace)


# --- the traversal corpus: every case is refused or stays inside; 0 escapes --------------------------------

NAME_CASES = [
    "fs:///etc/passwd", "fs:///", "fs://../outside/secret.txt", "fs://../../etc/passwd",
    "fs://notes/../../outside/secret.txt", "fs://notes/../..", "fs://..", "fs://./../outside/secret.txt",
    "fs://notes/./../../outside/secret.txt", "fs://a/b/c/../../../..", "fs://..//outside/secret.txt",
    "fs://notes/..", "fs://~/secret.txt", "fs://~root/.ssh/id_rsa", "fs://C:/Windows/win.ini",
    "fs://c:\\windows\\win.ini", "fs://..\\outside\\secret.txt", "fs://notes\\..\\..\\outside\\secret.txt",
    "fs://%2e%2e/outside/secret.txt", "fs://%2E%2E%2Foutside%2Fsecret.txt", "fs://..%2f..%2foutside",
    "fs://%252e%252e/outside", "fs://notes%2f..%2f..%2foutside", "fs://%c0%ae%c0%ae/outside",
    "fs://%u002e%u002e/outside", "fs://..%00/outside", "fs://notes/todo.md\x00.txt", "fs://\x00",
    "fs://notes/\x00../../outside", "fs://\uff0e\uff0e/outside/secret.txt", "fs://\u2025/outside/secret.txt",
    "fs://notes\uff0f..\uff0f..\uff0foutside", "fs://..\u2215outside\u2215secret.txt",
    "fs://\u2024\u2024/outside", "fs://\ufe52\ufe52/outside", "fs://notes/\u0000", "fs://a\nb/../../outside",
    "fs://a\rb", "fs://\x1b[31m", "fs://" + "a" * 256, "fs://" + "/".join(["a" * 200] * 6),
    "fs://" + "é" * 128, "fs://\udc80\udc81", "file:///etc/passwd", "/etc/passwd", "../outside/secret.txt",
    "fs:/notes", "FS://../outside", "fs://..;/outside", "fs://.../outside/secret.txt",
]


@pytest.mark.parametrize("path", NAME_CASES)
def test_a_traversal_by_name_is_refused_or_stays_inside(workspace, home, fs_root, path):
    for operation in (
        lambda: file_read(workspace=workspace, path=path),
        lambda: file_list(workspace=workspace, path=path),
        lambda: write(workspace, path, "pwned", allow_override=True),
        lambda: replace(workspace, path, "secret", "pwned", "all"),
    ):
        try:
            outcome = operation()
        except FileError:
            continue
        assert SECRET not in str(outcome)
    assert (fs_root / "outside" / "secret.txt").read_text() == SECRET
    assert not list(fs_root.glob("pwned*")) and not (fs_root / "outside" / "pwned").exists()
    assert _files_outside(fs_root) == {"outside/secret.txt"}


def _files_outside(fs_root: Path) -> set[str]:
    return {str(p.relative_to(fs_root)) for p in fs_root.rglob("*") if p.is_file()
            and not str(p.relative_to(fs_root)).startswith("root/")}


LINK_CASES = [
    ("a link to a file outside", "fs://link.txt", lambda home, out: os.symlink(out / "secret.txt", home / "link.txt")),
    ("a link to a folder outside", "fs://out/secret.txt", lambda home, out: os.symlink(out, home / "out")),
    ("a relative link up", "fs://up/outside/secret.txt", lambda home, out: os.symlink("../..", home / "up")),
    ("a link inside a folder", "fs://notes/out/secret.txt",
     lambda home, out: os.symlink(out, home / "notes" / "out")),
    ("a link to /", "fs://slash/etc/passwd", lambda home, out: os.symlink("/", home / "slash")),
    ("a link chain", "fs://one/secret.txt",
     lambda home, out: (os.symlink(out, home / "two"), os.symlink(home / "two", home / "one"))),
    ("a dangling link", "fs://dangle", lambda home, out: os.symlink(out / "nothing", home / "dangle")),
    ("a link to itself", "fs://loop", lambda home, out: os.symlink("loop", home / "loop")),
    ("a hard link to a file outside", "fs://hard.txt",
     lambda home, out: os.link(out / "secret.txt", home / "hard.txt")),
    ("a FIFO", "fs://fifo", lambda home, out: os.mkfifo(home / "fifo")),
    ("a link to a device", "fs://null", lambda home, out: os.symlink("/dev/null", home / "null")),
    ("a link to /proc/self", "fs://me/environ", lambda home, out: os.symlink("/proc/self", home / "me")),
]


@pytest.mark.parametrize("case, path, make", LINK_CASES, ids=[c[0] for c in LINK_CASES])
def test_links_fifos_and_hard_links_are_refused_when_opened(workspace, home, fs_root, case, path, make):
    make(home, fs_root / "outside")
    for operation in (
        lambda: file_read(workspace=workspace, path=path),
        lambda: write(workspace, path, "pwned", allow_override=True),
        lambda: replace(workspace, path, "secret", "pwned", "all"),
    ):
        with pytest.raises(FileError):
            operation()
    assert (fs_root / "outside" / "secret.txt").read_text() == SECRET
    assert _files_outside(fs_root) == {"outside/secret.txt"}


def test_listing_a_linked_folder_is_refused_and_a_listing_shows_links_as_links(workspace, home, fs_root):
    os.symlink(fs_root / "outside", home / "out")
    with pytest.raises(FileError, match="symbolic link"):
        file_list(workspace=workspace, path="fs://out")
    assert {"name": "out", "type": "link", "size": None} in file_list(workspace=workspace, path="fs://")["entries"]


def test_a_workspace_folder_that_is_itself_a_link_is_refused(workspace, fs_root, settings):
    root = Path(settings.FATHOM_FS_ROOT)
    root.mkdir(parents=True, exist_ok=True)
    os.symlink(fs_root / "outside", root / workspace.slug)
    with pytest.raises(FileError, match="symbolic link"):
        file_read(workspace=workspace, path="fs://secret.txt")


def test_a_device_file_is_refused_without_being_opened(workspace, home):
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(home / "zero", 0o600 | 0o020000, os.makedev(1, 5))
    with pytest.raises(FileError, match="device, not a regular file"):
        file_read(workspace=workspace, path="fs://zero")


@pytest.mark.parametrize("swap", ["folder", "file"])
def test_a_link_swapped_in_between_check_and_use_leads_nowhere(workspace, home, fs_root, swap):
    # given a path that alternates, as fast as a thread can swap it, between a real entry and a link out
    outside = fs_root / "outside"
    real, link, name = home / "real", home / "link", home / "x"
    if swap == "folder":
        real.mkdir()
        (real / "secret.txt").write_text("inside")
        os.symlink(outside, link)
        path = "fs://x/secret.txt"
    else:
        real.write_text("inside secret")
        os.symlink(outside / "secret.txt", link)
        path = "fs://x"
    os.rename(real, name)
    stop, swaps, failures = threading.Event(), [0], []

    def swapper():
        try:
            while not stop.is_set():
                os.rename(name, real)
                os.rename(link, name)
                os.rename(name, link)
                os.rename(real, name)
                swaps[0] += 1
        except OSError as exc:
            failures.append(exc)

    thread = threading.Thread(target=swapper)
    thread.start()
    outcomes = {"read": 0, "refused": 0}
    try:
        for _ in range(400):
            try:
                text = file_read(workspace=workspace, path=path)
            except FileError:
                outcomes["refused"] += 1
                continue
            assert SECRET not in text
            outcomes["read"] += 1
            try:  # a write through the same path (replace creates nothing, so the swapper keeps its four names)
                replace(workspace, path, "inside", "inside", "all")
            except FileError:
                pass
    finally:
        stop.set()
        thread.join()
    assert swaps[0] > 0 and not failures, failures  # the swapper ran the whole time
    assert outcomes["refused"] > 0  # the link side of the swap was met (the real side is met by chance)
    assert (outside / "secret.txt").read_text() == SECRET  # 0 escapes, either way
    assert _files_outside(fs_root) == {"outside/secret.txt"}


def test_the_corpus_has_at_least_sixty_cases():
    assert len(NAME_CASES) + len(LINK_CASES) + 2 + 1 + 1 + 1 >= 60


# --- managed:// --------------------------------------------------------------------------------------------

def test_managed_paths_list_and_read_profile_fields(workspace):
    profiles.agent_profile_create(workspace=workspace, slug="scout", soul_md="curious")
    profiles.user_profile_create(workspace=workspace, slug="ada", user_md="Ada Lovelace", preferences={"tea": True})
    assert [e["name"] for e in file_list(workspace=workspace, path="managed://")["entries"]] == ["agent", "user"]
    assert [e["name"] for e in file_list(workspace=workspace, path="managed://agent")["entries"]] == [
        "fathom", "scout"]
    fields = file_list(workspace=workspace, path="managed://agent/scout")["entries"]
    assert [e["name"] for e in fields] == ["AGENTS.md", "SOUL.md", "IDENTITY.md", "memory"]
    assert file_read(workspace=workspace, path="managed://agent/scout/SOUL.md") == "curious"
    assert file_read(workspace=workspace, path="managed://user/ada/USER.md") == "Ada Lovelace"
    assert '"tea": true' in file_read(workspace=workspace, path="managed://user/ada/preferences")
    assert "Fathom" in file_read(workspace=workspace, path="managed://agent/fathom/IDENTITY.md")


@pytest.mark.parametrize("path, message", [
    ("managed://agent/scout/secrets", "is not a managed file of a agent profile"),
    ("managed://robot/x/memory", "start with agent/ or user/"),
    ("managed://agent/nobody/memory", "no agent profile 'nobody'"),
    ("managed://user/ada/SOUL.md", "is not a managed file of a user profile"),
    ("managed://agent/scout/memory/more", "too deep"),
    ("managed://agent/scout", "is a folder"),
])
def test_bad_managed_paths_are_refused_clearly(workspace, path, message):
    profiles.agent_profile_create(workspace=workspace, slug="scout")
    profiles.user_profile_create(workspace=workspace, slug="ada")
    with pytest.raises(FileError, match=message):
        file_read(workspace=workspace, path=path)


def test_managed_writes_keep_every_previous_version(workspace):
    profile = profiles.agent_profile_create(workspace=workspace, slug="scout", memory="first")
    with pytest.raises(FileError, match="not empty; pass allow_override=true"):
        write(workspace, "managed://agent/scout/memory", "second")
    write(workspace, "managed://agent/scout/memory", "second", allow_override=True)
    replace(workspace, "managed://agent/scout/memory", "second", "third", "one")
    profile.refresh_from_db()
    assert (profile.memory, profile.version) == ("third", 3)
    history = list(ProfileFieldVersion.objects.filter(agent_profile=profile).order_by("version")
                   .values_list("field", "version", "content", "replaced_by"))
    assert history == [("memory", 1, "first", "test"), ("memory", 2, "second", "test")]


def test_managed_preferences_must_be_a_json_object(workspace):
    profiles.user_profile_create(workspace=workspace, slug="ada")
    with pytest.raises(FileError, match="preferences must be a JSON object"):
        write(workspace, "managed://user/ada/preferences", "[1, 2]")
    write(workspace, "managed://user/ada/preferences", '{"tea": "green"}')
    assert profiles.user_profile_get(workspace=workspace, slug="ada").preferences == {"tea": "green"}


def test_sessions_keep_their_copies_until_refresh_profile(workspace, scripted_llm):
    profiles.agent_profile_create(workspace=workspace, slug="scout", soul_md="curious")
    session = session_create(workspace=workspace, agent="scout")
    write(workspace, "managed://agent/scout/SOUL.md", "bold", allow_override=True)
    session.refresh_from_db()
    assert session.agent_profile_copy["soul_md"] == "curious"
    trigger_enqueue(session=session, kind=Trigger.Kind.REFRESH_PROFILE)
    session_tick(session_id=session.pk)
    session.refresh_from_db()
    assert (session.agent_profile_copy["soul_md"], session.agent_profile_copy["version"]) == ("bold", 2)


def test_managed_files_are_per_workspace(workspace, other_workspace):
    profiles.agent_profile_create(workspace=workspace, slug="scout", memory="mine")
    with pytest.raises(FileError, match="no agent profile 'scout'"):
        file_read(workspace=other_workspace, path="managed://agent/scout/memory")
    with pytest.raises(FileError, match="no agent profile 'scout'"):
        write(other_workspace, "managed://agent/scout/memory", "theirs", allow_override=True)
