"""``python -m docmem_gcs probe URL`` and ``docmem probe`` on a gs:// store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gcs_servers import endpoint, free_port, store_url

from docmem.testing.rewriting_proxy import GenerationStripper
from docmem_gcs.__main__ import main

pytestmark = pytest.mark.integration


@pytest.fixture
def stripper() -> Iterator[GenerationStripper]:
    with GenerationStripper(endpoint()) as proxy:
        yield proxy


def test_probe_prints_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", store_url(), "--writers", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8
    assert all(line.startswith("ok: ") for line in lines)
    assert lines[-1] == "ok: 4 concurrent creates have exactly one winner"


def test_probe_refuses_a_server_that_ignores_the_condition(
    stripper: GenerationStripper, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["probe", store_url(through=stripper.url)]) == 1
    assert capsys.readouterr().out.startswith("REFUSED: ")


def test_probe_of_an_unreachable_store_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"gs://b/p?endpoint_url=http://127.0.0.1:{free_port()}&connect_timeout=0.5"
    assert main(["probe", url]) == 2
    assert capsys.readouterr().out.startswith("ERROR (store_unavailable): ")


def test_probe_refuses_another_scheme() -> None:
    with pytest.raises(SystemExit):
        main(["probe", "memory://"])


def test_docmem_probe_asks_the_store_for_its_own_checks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``docmem probe`` reaches the plug-in's probe through ``Backend.check_server``."""
    from docmem.cli import main as docmem_main

    assert docmem_main(["probe", "--store", store_url(), "--writers", "4"]) == 0
    out = capsys.readouterr().out
    assert "docmem-gcs" in out
    assert "a second create of the same object is refused" in out
