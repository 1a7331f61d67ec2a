"""`fathom status` prints what a second host must share with this one, secrets left out."""

from io import StringIO

from django.core.management import call_command

from fathom.file_root import file_root_verify


def test_status_prints_every_setting_a_second_host_must_share_without_a_secret(db, tmp_path, settings):
    settings.FATHOM_FS_ROOT = tmp_path / "fs"
    mark = file_root_verify()
    out = StringIO()
    call_command("fathom", "status", stdout=out)
    text = out.getvalue()
    needs = text[text.index("a second host needs the same"):]
    for name in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "FATHOM_ENCRYPTION_KEY", "FATHOM_FS_ROOT"):
        assert f"  {name}: " in needs, name
    assert f"FATHOM_FS_ROOT: {tmp_path / 'fs'} (marked {mark.token[:8]}..." in needs
    assert settings.SECRET_KEY not in text and settings.FATHOM_ENCRYPTION_KEY not in text
    assert mark.token not in text
