"""Reads an 8-bit RGB PNG (what `shardc plot -o x.png` writes) with zlib only.

  png_pixels.py FILE [X,Y ...] [--count #rrggbb ...]

Prints `size W x H`, then `X,Y #rrggbb` for each pixel asked, then
`count #rrggbb N` for each color asked. Checks every chunk's CRC-32 and that
the image data decompresses to exactly H rows of a filter byte and W*3 bytes.
"""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    at, chunks = 8, []
    while at < len(data):
        n, = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + n]
        crc, = struct.unpack(">I", data[at + 8 + n:at + 12 + n])
        if zlib.crc32(kind + body) != crc:
            sys.exit(f"{path}: bad CRC in chunk {kind!r}")
        chunks.append((kind, body))
        at += 12 + n
    kinds = [k for k, _ in chunks]
    if kinds[0] != b"IHDR" or kinds[-1] != b"IEND":
        sys.exit(f"{path}: chunks {kinds}")
    w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if (depth, ctype, interlace) != (8, 2, 0):
        sys.exit(f"{path}: not 8-bit RGB without interlace")
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    stride = w * 3 + 1
    if len(raw) != h * stride or any(raw[y * stride] != 0 for y in range(h)):
        sys.exit(f"{path}: image data is not {h} unfiltered rows of {w} pixels")
    rows = [raw[y * stride + 1:(y + 1) * stride] for y in range(h)]
    return w, h, rows


def main():
    args = sys.argv[1:]
    w, h, rows = read_png(args[0])
    print(f"size {w} x {h}")
    colors = []
    if "--count" in args:
        i = args.index("--count")
        colors, args = args[i + 1:], args[:i]
    for xy in args[1:]:
        x, y = map(int, xy.split(","))
        r, g, b = rows[y][3 * x:3 * x + 3]
        print(f"{x},{y} #{r:02x}{g:02x}{b:02x}")
    for c in colors:
        want = bytes.fromhex(c.lstrip("#"))
        n = sum(1 for row in rows for x in range(w) if row[3 * x:3 * x + 3] == want)
        print(f"count {c} {n}")


if __name__ == "__main__":
    main()
