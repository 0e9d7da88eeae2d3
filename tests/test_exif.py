"""Images with an EXIF orientation are turned upright wherever the pipeline re-encodes or decodes them."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from sabre_prior.analysis.report import thumbnail_uri
from sabre_prior.inference.models.local_common import decode_image
from sabre_prior.inference.prompts import ImagePolicy, prepare_image

#: EXIF tag 0x0112 Orientation; 6 = "rotate 90 CW to display" (a phone held upright), as PIL reads it.
ORIENTATION, ROTATE_90_CW = 0x0112, 6


def _sideways_jpeg() -> bytes:
    """Stored 80 x 40 (wide), red left half; displayed 40 x 80 (tall) with the red half on top."""
    img = Image.new("RGB", (80, 40), (0, 0, 255))
    img.paste((255, 0, 0), (0, 0, 40, 40))
    exif = Image.Exif()
    exif[ORIENTATION] = ROTATE_90_CW
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=95, exif=exif.tobytes())
    return buf.getvalue()


def _upright(img: Image.Image, expected: tuple[int, int]) -> None:
    assert img.size == expected
    rgb = img.convert("RGB")
    top, bottom = rgb.getpixel((img.width // 2, 2)), rgb.getpixel((img.width // 2, img.height - 3))
    assert top[0] > 200 and top[2] < 60, top  # red on top: rotated the way a viewer shows it
    assert bottom[2] > 200 and bottom[0] < 60, bottom


def test_fixture_really_is_sideways() -> None:
    with Image.open(io.BytesIO(_sideways_jpeg())) as img:
        assert img.size == (80, 40) and img.getexif()[ORIENTATION] == ROTATE_90_CW


@pytest.mark.parametrize("quality", [85, 40])
def test_reencoded_request_image_is_upright(quality: int) -> None:
    sent = prepare_image(_sideways_jpeg(), ImagePolicy(max_side=40, quality=quality))
    assert sent.reencoded and (sent.width, sent.height) == (20, 40)
    with Image.open(io.BytesIO(sent.data)) as img:
        assert ORIENTATION not in img.getexif()
        _upright(img, (20, 40))


def test_report_thumbnail_is_upright() -> None:
    uri = thumbnail_uri(_sideways_jpeg(), 16)
    with Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))) as img:
        _upright(img, (8, 16))


def test_local_model_input_is_upright() -> None:
    _upright(decode_image(_sideways_jpeg()), (40, 80))
