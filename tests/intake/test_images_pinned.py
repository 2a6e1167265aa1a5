"""Reference images are pinned at import and checked again at render (issue 11, item 5).

The audit swapped an imported image for an SSH private key and the create body carried
it. Now: the path is confined to the sheet's folder, never followed through a link, its
size and signature are checked, its sha256 is recorded with the job, and the adapter reads
it once at render time and refuses bytes that changed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.images import MAX_IMAGE_BYTES
from reelqueue.intake import StaticCatalog
from reelqueue.intake.images import PIN_FIELD
from reelqueue.intake.jobs import key_digest
from reelqueue.providers.adapters._images import load_image
from tests.intake.conftest import plan_text

pytestmark = pytest.mark.unit

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
SECRET = b"-----BEGIN OPENSSH PRIVATE KEY-----\nnot really\n"


def errors_of(plan: object) -> list[tuple[int | None, str]]:
    return [(e.row_number, e.message) for e in plan.errors]  # type: ignore[attr-defined]


def test_the_sha256_is_recorded_and_the_key_is_what_it_always_was(
    tmp_path: Path, catalog: StaticCatalog
) -> None:
    (tmp_path / "first.png").write_bytes(PNG)
    plan = plan_text(tmp_path, "prompt,image\nok,first.png\n", catalog)
    params = plan.jobs[0].params
    assert params[PIN_FIELD] == hashlib.sha256(PNG).hexdigest()
    # The pin is added after the key is made: the key hashes the row's params as they
    # always were (the job-key format must never change, or a re-import renders twice).
    without_pin = {k: v for k, v in params.items() if k != PIN_FIELD}
    job = plan.jobs[0]
    # (no name column: the key hashes an empty name; the file name comes from the prompt)
    expected = "row:" + key_digest("sheet", job.prompt, job.provider, without_pin, None, "")
    assert job.job_key == expected


def test_paths_outside_the_sheets_folder_are_refused(tmp_path: Path,
                                                     catalog: StaticCatalog) -> None:
    sheet_dir = tmp_path / "sheet"
    sheet_dir.mkdir()
    (tmp_path / "outside.png").write_bytes(PNG)
    (sheet_dir / "inside.png").write_bytes(PNG)
    (sheet_dir / "sub").mkdir()
    (sheet_dir / "sub" / "deep.png").write_bytes(PNG)
    secret = tmp_path / "id_rsa"
    secret.write_bytes(SECRET)
    (sheet_dir / "innocent.png").symlink_to(secret)
    (sheet_dir / "alias.png").symlink_to(sheet_dir / "inside.png")
    (sheet_dir / "linkdir").symlink_to(tmp_path)
    text = (
        "prompt,image\n"
        "a,inside.png\n"
        "b,sub/deep.png\n"
        "c,../outside.png\n"
        f"d,{tmp_path / 'outside.png'}\n"
        "e,innocent.png\n"
        "f,alias.png\n"
        "g,linkdir/outside.png\n"
    )
    plan = plan_text(sheet_dir, text, catalog)
    assert [job.row_number for job in plan.jobs] == [2, 3]
    rows = dict(errors_of(plan))
    assert "outside the sheet's folder" in rows[4]
    assert "outside the sheet's folder" in rows[5]
    assert "outside the sheet's folder" in rows[6]  # the link leads out
    assert "symbolic link" in rows[7]  # a link inside the folder is still a link
    assert "outside the sheet's folder" in rows[8]
    assert all(SECRET.decode()[:10] not in message for message in rows.values())


def test_an_absolute_path_inside_the_sheets_folder_is_accepted(
        tmp_path: Path, catalog: StaticCatalog) -> None:
    """Most sheets name files by their absolute path (issue 23): one inside the sheet's
    folder was refused as "outside the sheet's folder"."""
    sheet_dir = tmp_path / "sheet"
    (sheet_dir / "sub").mkdir(parents=True)
    (sheet_dir / "inside.png").write_bytes(PNG)
    (sheet_dir / "sub" / "deep.png").write_bytes(PNG)
    (tmp_path / "outside.png").write_bytes(PNG)
    text = ("prompt,image\n"
            f"a,{sheet_dir / 'inside.png'}\n"
            f"b,{sheet_dir / 'sub' / 'deep.png'}\n"
            "c,sub/../inside.png\n"
            f"d,{sheet_dir / 'sub' / '..' / '..' / 'outside.png'}\n")
    plan = plan_text(sheet_dir, text, catalog)
    assert [job.row_number for job in plan.jobs] == [2, 3, 4], errors_of(plan)
    assert plan.jobs[0].params["image"] == str(sheet_dir / "inside.png")
    assert plan.jobs[0].params[PIN_FIELD] == hashlib.sha256(PNG).hexdigest()
    # The refusal is true and names the folder and the way to allow it.
    message = dict(errors_of(plan))[5]
    assert message == (f"the image is outside the sheet's folder ({sheet_dir}): "
                       f"{str(sheet_dir / 'sub' / '..' / '..' / 'outside.png')!r}")
    [error] = plan.errors
    assert "--allow-images-anywhere" in error.accepted
    assert "Allow images from other folders" in error.accepted


def test_a_sheet_opened_through_a_linked_folder_takes_paths_written_through_it(
        tmp_path: Path, catalog: StaticCatalog) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "inside.png").write_bytes(PNG)
    (tmp_path / "alias").symlink_to(real)
    text = f"prompt,image\na,{tmp_path / 'alias' / 'inside.png'}\n"
    plan = plan_text(tmp_path / "alias", text, catalog)
    assert [job.row_number for job in plan.jobs] == [2], errors_of(plan)
    assert plan.jobs[0].params["image"] == str(real / "inside.png")


def test_allow_anywhere_takes_outside_paths_but_never_links(tmp_path: Path,
                                                            catalog: StaticCatalog) -> None:
    sheet_dir = tmp_path / "sheet"
    sheet_dir.mkdir()
    (tmp_path / "outside.png").write_bytes(PNG)
    secret = tmp_path / "id_rsa"
    secret.write_bytes(SECRET)
    (tmp_path / "link.png").symlink_to(secret)
    text = (f"prompt,image\na,../outside.png\nb,{tmp_path / 'outside.png'}\n"
            f"c,{tmp_path / 'link.png'}\n")
    plan = plan_text(sheet_dir, text, catalog, allow_images_anywhere=True)
    assert [job.row_number for job in plan.jobs] == [2, 3]
    assert "symbolic link" in dict(errors_of(plan))[4]


def test_size_fifo_and_signature_are_checked(tmp_path: Path, catalog: StaticCatalog) -> None:
    with (tmp_path / "huge.png").open("wb") as handle:
        handle.write(PNG)
        handle.truncate(MAX_IMAGE_BYTES + 1)
    (tmp_path / "key.png").write_bytes(SECRET)
    os.mkfifo(tmp_path / "pipe.png")  # opening a FIFO must not hang the import
    plan = plan_text(tmp_path, "prompt,image\na,huge.png\nb,key.png\nc,pipe.png\n", catalog)
    rows = dict(errors_of(plan))
    assert "the limit is 20 MB" in rows[2]
    assert "not a PNG, JPEG or WebP image" in rows[3]
    assert "not a regular file" in rows[4]


async def test_a_file_swapped_after_import_is_refused_and_nothing_is_read_out(
    tmp_path: Path, catalog: StaticCatalog
) -> None:
    image = tmp_path / "first.png"
    image.write_bytes(PNG)
    plan = plan_text(tmp_path, "prompt,image\nok,first.png\n", catalog)
    params = plan.jobs[0].params
    loaded = await load_image(params["image"], "Mock", params[PIN_FIELD])
    assert loaded.data == PNG

    image.write_bytes(PNG + b"tail")  # still an image, other bytes
    with pytest.raises(ProviderError) as caught:
        await load_image(params["image"], "Mock", params[PIN_FIELD])
    assert caught.value.error_class is ErrorClass.PERMANENT
    assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert "changed after the sheet was imported" in str(caught.value)

    image.unlink()
    secret = tmp_path / "id_rsa"
    secret.write_bytes(SECRET)
    image.symlink_to(secret)  # swapped for a link to a secret
    with pytest.raises(ProviderError, match="symbolic link") as linked:
        await load_image(params["image"], "Mock", params[PIN_FIELD])
    assert "OPENSSH" not in str(linked.value)
