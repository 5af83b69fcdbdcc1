"""A target URL holding credentials (``http://user:password@host``) is refused by every command,
wherever the URL comes from, in one line that does not echo the password (TRYOUT3 finding 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from igestbench import redaction
from igestbench.errors import UsageError
from igestbench.icat.endpoint import endpoint_of
from tests.test_run import credentials_env, sv7

PASSWORD = "secretpw-7Qx"
URL = f"http://root:{PASSWORD}@127.0.0.1:9"
REFUSAL = "the URL holds credentials (user:…@)"


@pytest.mark.parametrize("url", [URL, "root@127.0.0.1:9", f"https://root:{PASSWORD}@h:99999/x"])
def test_endpoint_of_refuses_user_info_without_echoing_it(url: str) -> None:
    with pytest.raises(UsageError) as caught:
        endpoint_of(url)
    assert REFUSAL in str(caught.value)
    assert PASSWORD not in str(caught.value) and "root" not in str(caught.value)
    assert "SV7_PASSWORD" in str(caught.value)


def _refused(result: object, out: Path, code: int = 2) -> str:
    text = result.stdout + result.stderr  # type: ignore[attr-defined]
    assert result.returncode == code, text  # type: ignore[attr-defined]
    assert REFUSAL in text
    assert PASSWORD not in text
    assert len(text.strip().splitlines()) == 1, text
    assert not any(out.rglob("*.json")), "nothing may be written"
    return text


@pytest.mark.parametrize(
    "where",
    ["--target", "SV7_TARGET", "sv7.toml", "check", "cleanup", "swarm master", "campaign.toml"],
)
def test_every_entry_point_refuses_a_target_url_with_credentials(
    where: str, tmp_path: Path
) -> None:
    env = credentials_env()
    out = tmp_path / "reports"
    run = ("run", "--parts", "verify", "--out", str(out))
    if where == "--target":
        result = sv7(*run, "--target", URL, env=env, cwd=tmp_path)
    elif where == "SV7_TARGET":
        result = sv7(*run, env={**env, "SV7_TARGET": URL}, cwd=tmp_path)
    elif where == "sv7.toml":
        (tmp_path / "sv7.toml").write_text(f'[run]\ntarget = "{URL}"\n')
        result = sv7(*run, env=env, cwd=tmp_path)
    elif where == "check":  # a monitoring probe: UNKNOWN (3), since 2 would read as CRITICAL
        result = sv7("check", "--target", URL, env=env, cwd=tmp_path)
        assert result.stdout.startswith("ICAT UNKNOWN - --target: ")
        _refused(result, out, code=3)
        return
    elif where == "cleanup":
        out.mkdir()
        result = sv7("cleanup", "--target", URL, str(out), env=env, cwd=tmp_path)
    elif where == "swarm master":
        result = sv7("swarm", "master", "--target", URL, "--out", str(out), env=env, cwd=tmp_path)
    else:
        (tmp_path / "campaign.toml").write_text(
            '[campaign]\nname = "c"\n[[site]]\nname = "A"\n'
            f'[[target]]\nname = "t"\nurl = "{URL}"\n'
        )
        out.mkdir()
        result = sv7("merge", "--campaign", "campaign.toml", str(out), "-o", "c.json",
                     env=env, cwd=tmp_path)  # fmt: skip
        assert not (tmp_path / "c.json").exists()
    _refused(result, out)


def test_redaction_scrubs_the_password_of_a_url() -> None:
    fresh = redaction.Redactor()  # not the process's: other tests' logins fill that one
    text = fresh.scrub(f"GET {URL}/icat/version answered; 'https://u:p@ss@h/x'")
    assert PASSWORD not in text and "p@ss" not in text
    assert "http://root:<secret>@127.0.0.1:9/icat/version" in text
    # a port, a path with an @ and an e-mail address are no credentials
    assert fresh.scrub("http://host:8080/a@b mail a:b@c") == "http://host:8080/a@b mail a:b@c"


def test_a_url_s_password_is_scrubbed_when_its_user_name_is_a_known_secret() -> None:
    # seen in CI 2026-11-26: after a test's login as root/root the process knew "root" as a
    # secret, replaced the user name first, and the URL pattern no longer matched the rest
    known = redaction.Redactor()
    known.remember("root")
    text = known.scrub(f"GET {URL}/icat/version answered")
    assert PASSWORD not in text and "@127.0.0.1:9/icat/version" in text


def test_an_old_result_file_with_a_password_in_its_url_stays_out_of_a_campaign(
    tmp_path: Path,
) -> None:
    """Files written before the refusal hold the URL 4 times: sv7 merge skips such a file,
    and says why without the password."""
    from igestbench.results.merge import merge
    from tests.campaign_helpers import check, write_result

    path = write_result(tmp_path / "r", "CHK", f"{URL}/ICATService/ICAT", checks=[check("a")])
    outcome = merge([path])
    assert not outcome.document["runs"]
    (skipped,) = outcome.skipped
    assert REFUSAL in skipped.reason and PASSWORD not in skipped.reason
