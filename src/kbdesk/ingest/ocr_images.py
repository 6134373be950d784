"""Images for OCR, read without an imaging library: what a file is and how big (its
header), how many pages a TIFF holds, and the images a PDF page draws, as files
tesseract reads (JPEG, JPEG 2000 and CCITT fax as they are; raw samples as PNM, scaled
down by numpy when over the pixel cap). Pillow, when installed, scales down image files
over the cap. Loaded by path in the OCR child (:mod:`.ocr_worker`): it imports nothing
from kbdesk.
"""

from __future__ import annotations

import re
import struct
from typing import Any

MAX_IMAGES_PER_PAGE = 8  # a page drawn from tiles: the largest few are read
MIN_SIDE = 24  # an icon or a rule: too small to hold a line of text
MAX_SIDE = 32767  # Tesseract refuses an image wider or taller than this


class Unreadable(Exception):
    """An image in a form kbdesk does not decode; the message says which."""


# ── images as files: what they are and how big ─────────────────────────────────────


def image_kind(data: bytes) -> str | None:
    """The image format by its magic bytes, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data.startswith(b"BM"):
        return "bmp"
    if data.startswith((b"\x00\x00\x00\x0cjP  ", b"\xff\x4f\xff\x51")):
        return "jp2"
    return None


def image_size(data: bytes, kind: str) -> tuple[int, int] | None:
    """(width, height) from the header (the first image of a TIFF), or None when unknown."""
    try:
        if kind == "png":
            return struct.unpack(">II", data[16:24])
        if kind == "gif":
            return struct.unpack("<HH", data[6:10])
        if kind == "bmp":
            w, h = struct.unpack("<ii", data[18:26])
            return abs(w), abs(h)
        if kind == "webp":
            chunk = data[12:16]
            if chunk == b"VP8X":
                w = int.from_bytes(data[24:27], "little") + 1
                h = int.from_bytes(data[27:30], "little") + 1
                return w, h
            if chunk == b"VP8L":
                bits = int.from_bytes(data[21:25], "little")
                return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
            if chunk == b"VP8 ":
                w, h = struct.unpack("<HH", data[26:30])
                return w & 0x3FFF, h & 0x3FFF
            return None
        if kind == "jpeg":
            i = 2
            while i + 9 < len(data):
                if data[i] != 0xFF:
                    return None
                marker = data[i + 1]
                if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                    i += 2
                    continue
                length = struct.unpack(">H", data[i + 2 : i + 4])[0]
                if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                    h, w = struct.unpack(">HH", data[i + 5 : i + 9])
                    return w, h
                i += 2 + length
            return None
        if kind == "tiff":
            order = "<" if data[:2] == b"II" else ">"
            (ifd,) = struct.unpack(order + "I", data[4:8])
            (count,) = struct.unpack(order + "H", data[ifd : ifd + 2])
            found: dict[int, int] = {}
            for n in range(min(count, 512)):
                at = ifd + 2 + 12 * n
                tag, typ = struct.unpack(order + "HH", data[at : at + 4])
                if tag in (256, 257):
                    fmt = "H" if typ == 3 else "I"
                    (found[tag],) = struct.unpack(order + fmt, data[at + 8 : at + 8 + struct.calcsize(fmt)])
            if 256 in found and 257 in found:
                return found[256], found[257]
            return None
    except (struct.error, IndexError):
        return None
    return None


def image_frames(data: bytes) -> int:
    """How many pages a TIFF holds (its chain of image directories), else 1."""
    if image_kind(data) != "tiff":
        return 1
    order = "<" if data[:2] == b"II" else ">"
    frames, seen = 0, set()
    try:
        (ifd,) = struct.unpack(order + "I", data[4:8])
        while ifd and ifd not in seen and frames < 10_000:
            seen.add(ifd)
            frames += 1
            (count,) = struct.unpack(order + "H", data[ifd : ifd + 2])
            (ifd,) = struct.unpack(order + "I", data[ifd + 2 + 12 * count : ifd + 6 + 12 * count])
    except struct.error:
        pass
    return max(frames, 1)


def jbig2dec() -> str | None:
    """The jbig2dec program (JBIG2 is how many scanners compress black and white pages),
    when installed: pypdf runs it to decode such images."""
    import shutil

    return shutil.which("jbig2dec")


def pillow_png(data: bytes) -> bytes | None:
    """``data`` as a PNG through Pillow, for an image Tesseract's reader refuses (some JPEG
    2000 files), or None when Pillow is not installed or cannot read it either."""
    return pillow_downscale(data, 0)


def pillow_downscale(data: bytes, max_pixels: int) -> bytes | None:
    """``data`` scaled to at most ``max_pixels`` as a PNG (every frame of a TIFF as a
    multi-page TIFF), or None when Pillow is not installed or cannot read it."""
    try:
        from PIL import Image, ImageSequence
    except ImportError:
        return None
    import io

    Image.MAX_IMAGE_PIXELS = None  # the memory cap of this process is the bound
    try:
        with Image.open(io.BytesIO(data)) as img:
            frames = []
            for frame in ImageSequence.Iterator(img):
                w, h = frame.size
                scale = min(1.0, (max_pixels / max(w * h, 1)) ** 0.5) if max_pixels else 1.0
                if img.format == "JPEG" and scale < 1:
                    frame.draft("L", (int(w * scale), int(h * scale)))  # decode at a fraction: less memory, time
                out = frame.convert("L")
                if scale < 1:
                    out = out.resize((max(1, int(w * scale)), max(1, int(h * scale))), Image.Resampling.LANCZOS)
                frames.append(out)
            buf = io.BytesIO()
            if len(frames) > 1:
                frames[0].save(buf, "TIFF", save_all=True, append_images=frames[1:], compression="tiff_deflate")
            else:
                frames[0].save(buf, "PNG", compress_level=1)
            return buf.getvalue()
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - Pillow cannot read it: tesseract gets the original
        return None


# ── images inside a PDF page ────────────────────────────────────────────────────────


def _pnm(width: int, height: int, channels: int, bits: int, raw: bytes, invert: bool) -> tuple[bytes, str]:
    """Raw PDF samples → a PNM file (PBM for 1 bit, PGM for gray, PPM for RGB)."""
    if bits == 1 and channels == 1:
        row = (width + 7) // 8
        body = raw[: row * height]
        # PDF's DeviceGray 1 is white, PBM's 1 is black: invert unless /Decode did already
        if not invert:
            body = body.translate(bytes(255 - b for b in range(256)))
        return b"P4\n%d %d\n" % (width, height) + body, ".pbm"
    if bits == 8 and channels in (1, 3):
        body = raw[: width * height * channels]
        if invert:
            body = body.translate(bytes(255 - b for b in range(256)))
        magic = b"P5" if channels == 1 else b"P6"
        return magic + b"\n%d %d\n255\n" % (width, height) + body, ".pgm" if channels == 1 else ".ppm"
    raise Unreadable(f"{bits}-bit samples in {channels} channels")


def _as_array(width: int, height: int, channels: int, bits: int, raw: bytes, palette: bytes | None) -> Any:
    """Samples that a PNM cannot hold as they are → an 8-bit gray or RGB numpy array."""
    import numpy as np

    if bits == 16:
        arr = np.frombuffer(raw[: width * height * channels * 2], dtype=">u2").astype(np.uint16) >> 8
        arr = arr.astype(np.uint8)
    elif bits == 8:
        arr = np.frombuffer(raw[: width * height * channels], dtype=np.uint8)
    elif bits in (1, 2, 4) and channels == 1:
        row = (width * bits + 7) // 8
        packed = np.frombuffer(raw[: row * height], dtype=np.uint8).reshape(height, row)
        unpacked = np.unpackbits(packed, axis=1).reshape(height, row * 8 // bits, bits)
        weights = (1 << np.arange(bits - 1, -1, -1)).astype(np.uint8)
        arr = (unpacked * weights).sum(axis=2).astype(np.uint8)[:, :width].reshape(-1)
        if palette is None:
            arr = (arr * (255 // ((1 << bits) - 1))).astype(np.uint8)
    else:
        raise Unreadable(f"{bits}-bit samples in {channels} channels")
    if palette is not None:
        pal = np.frombuffer(palette, dtype=np.uint8)
        base = max(1, len(pal) // 256) if len(pal) % 3 else 3
        table = np.zeros((256, base), dtype=np.uint8)
        entries = pal[: (len(pal) // base) * base].reshape(-1, base)[:256]
        table[: len(entries)] = entries
        arr = table[arr]
        channels = base
    arr = arr.reshape(height, width, channels)
    if channels == 4:  # CMYK → RGB, naively
        cmyk = arr.astype(np.uint16)
        k = cmyk[:, :, 3:4]
        arr = (255 - np.minimum(255, cmyk[:, :, :3] + k)).astype(np.uint8)
    return arr


def _downscale(arr: Any, max_pixels: int) -> Any:
    """A box-filtered numpy image at most ``max_pixels`` in size (an integer factor)."""
    height, width = arr.shape[:2]
    factor = 1
    while (height // factor) * (width // factor) > max_pixels:
        factor += 1
    if factor == 1:
        return arr
    import numpy as np

    h, w = height // factor, width // factor
    cropped = arr[: h * factor, : w * factor].astype(np.uint16)
    return cropped.reshape(h, factor, w, factor, -1).mean(axis=(1, 3)).astype(np.uint8)


def _array_pnm(arr: Any) -> tuple[bytes, str]:
    height, width, channels = arr.shape
    magic, suffix = (b"P5", ".pgm") if channels == 1 else (b"P6", ".ppm")
    return magic + b"\n%d %d\n255\n" % (width, height) + arr.tobytes(), suffix


def _colour(space: Any) -> tuple[int, bytes | None]:
    """(channels, palette) of a PDF colour space; raises Unreadable for what is not read."""
    space = space.get_object() if hasattr(space, "get_object") else space
    name = space if isinstance(space, str) else None
    if isinstance(space, list) and space:
        name = str(space[0])
        if name == "/Indexed":
            base_channels, _ = _colour(space[1])
            lookup = space[3].get_object()
            if hasattr(lookup, "get_data"):
                palette = lookup.get_data()
            elif isinstance(lookup, bytes):
                palette = bytes(lookup)
            else:  # a string pypdf read as text: the bytes it was written as
                palette = bytes(getattr(lookup, "original_bytes", b"")) or str(lookup).encode("latin-1", "replace")
            if base_channels not in (1, 3, 4):
                raise Unreadable("an indexed colour space over an unusual base")
            if base_channels != 3:
                import numpy as np

                entries = np.frombuffer(palette, dtype=np.uint8)
                entries = entries[: len(entries) // base_channels * base_channels].reshape(-1, base_channels)
                if base_channels == 1:
                    entries = np.repeat(entries, 3, axis=1)
                else:
                    k = entries[:, 3:4].astype(np.uint16)
                    entries = (255 - np.minimum(255, entries[:, :3].astype(np.uint16) + k)).astype(np.uint8)
                palette = entries.tobytes()
            return 1, palette
        if name == "/ICCBased":
            stream = space[1].get_object()
            return int(stream.get("/N", 3)), None
        if name in ("/CalGray", "/CalRGB", "/Lab"):
            return (1 if name == "/CalGray" else 3), None
    if name in ("/DeviceGray", "/G", "/CalGray"):
        return 1, None
    if name in ("/DeviceRGB", "/RGB", "/CalRGB"):
        return 3, None
    if name in ("/DeviceCMYK", "/CMYK"):
        return 4, None
    raise Unreadable(f"images in the colour space {name or space!r}")


def _filters(xobj: Any) -> list[str]:
    filters = xobj.get("/Filter")
    if filters is None:
        return []
    filters = filters.get_object()
    return [str(f) for f in filters] if isinstance(filters, list) else [str(filters)]


def image_file(xobj: Any, max_pixels: int) -> tuple[bytes, str]:
    """A PDF image XObject → (bytes of a file tesseract reads, its suffix)."""
    width, height = int(xobj["/Width"]), int(xobj["/Height"])
    if max(width, height) > MAX_SIDE:
        raise Unreadable(f"an image of {width}×{height} pixels, larger than OCR reads")
    filters = _filters(xobj)
    last = filters[-1] if filters else None
    if last == "/JBIG2Decode" and not jbig2dec():
        raise Unreadable(
            "JBIG2 images need jbig2dec to be read (Debian/Ubuntu: sudo apt install jbig2dec; "
            "Fedora: sudo dnf install jbig2dec; macOS: brew install jbig2dec)"
        )
    data = xobj.get_data()
    if last == "/JBIG2Decode":  # pypdf ran jbig2dec (under this process's caps): a PNG
        return data, ".png"
    if last in ("/DCTDecode", "/DCT"):
        return data, ".jpg"
    if last == "/JPXDecode":
        return data, ".jp2"
    if last in ("/CCITTFaxDecode", "/CCF"):
        return data, ".tif"
    if xobj.get("/ImageMask"):  # a stencil: 0 is painted (black, as PBM's 1) unless /Decode [1 0]
        decode = xobj.get("/Decode")
        painted_is_one = decode is not None and [float(v) for v in decode] == [1.0, 0.0]
        return _pnm(width, height, 1, 1, data, painted_is_one)
    channels, palette = _colour(xobj.get("/ColorSpace", "/DeviceGray"))
    bits = int(xobj.get("/BitsPerComponent", 8))
    decode = xobj.get("/Decode")
    invert = decode is not None and len(decode) == 2 and [float(v) for v in decode] == [1.0, 0.0]
    plain = palette is None and channels in (1, 3) and (bits == 8 or (bits == 1 and channels == 1))
    if plain and width * height <= max_pixels:
        return _pnm(width, height, channels, bits, data, invert)
    arr = _as_array(width, height, channels, bits, data, palette)
    if invert:
        arr = 255 - arr
    return _array_pnm(_downscale(arr, max_pixels))


_DO = re.compile(rb"/([^\s/\[\]<>(){}%]+)\s+Do\b")


def _drawn(content: Any) -> set[str]:
    """The names of the XObjects a content stream draws (``/Im0 Do``)."""
    if content is None:
        return set()
    try:
        data = content.get_data() if hasattr(content, "get_data") else b""
    except Exception:  # noqa: BLE001 - an unreadable stream draws nothing we can read
        return set()
    return {"/" + m.decode("latin-1") for m in _DO.findall(data)}


def page_images(page: Any) -> list[Any]:
    """The image XObjects a page draws (inside forms too), largest first: those its
    content streams name, not every image its resources list (generators share one
    resource dictionary between all pages)."""
    found: list[Any] = []
    seen: set[int] = set()

    def walk(resources: Any, drawn: set[str], depth: int) -> None:
        if resources is None or depth > 3:
            return
        xobjects = resources.get_object().get("/XObject")
        if xobjects is None:
            return
        for name, ref in xobjects.get_object().items():
            if name not in drawn:
                continue
            key = getattr(ref, "idnum", None)
            if key is not None:
                if key in seen:
                    continue
                seen.add(key)
            xobj = ref.get_object()
            subtype = xobj.get("/Subtype")
            if subtype == "/Image":
                if int(xobj.get("/Width", 0)) >= MIN_SIDE and int(xobj.get("/Height", 0)) >= MIN_SIDE:
                    found.append(xobj)
            elif subtype == "/Form":
                walk(xobj.get("/Resources"), _drawn(xobj), depth + 1)

    walk(page.get("/Resources"), _drawn(page.get_contents()), 0)
    found.sort(key=lambda x: int(x["/Width"]) * int(x["/Height"]), reverse=True)
    if found:  # tiles and the scan itself, not the small logos beside them
        largest = int(found[0]["/Width"]) * int(found[0]["/Height"])
        found = [x for x in found if int(x["/Width"]) * int(x["/Height"]) * 4 >= largest]
    return found[:MAX_IMAGES_PER_PAGE]
