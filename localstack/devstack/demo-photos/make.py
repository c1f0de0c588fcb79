"""Draws the demo bouquets' photos (PNG, 640 x 480) with the standard library only: flowers as
petal circles on stems in a vase. Made by this script, so free of anyone else's licence.
Run: python3 localstack/devstack/demo-photos/make.py (writes the four PNGs beside it)."""

import math
import random
import struct
import zlib
from pathlib import Path

W, H = 640, 480


class Canvas:
    def __init__(self, top, bottom):
        self.px = [bytearray(W * 3) for _ in range(H)]
        for y in range(H):
            t = y / (H - 1)
            c = bytes(int(a + (b - a) * t) for a, b in zip(top, bottom))
            self.px[y][:] = c * W

    def dot(self, x, y, colour):
        if 0 <= x < W and 0 <= y < H:
            self.px[y][x * 3:x * 3 + 3] = bytes(colour)

    def circle(self, cx, cy, r, colour):
        for y in range(int(cy - r), int(cy + r) + 1):
            half = r * r - (y - cy) ** 2
            if half < 0 or not 0 <= y < H:
                continue
            span = math.sqrt(half)
            x0, x1 = max(0, int(cx - span)), min(W - 1, int(cx + span))
            self.px[y][x0 * 3:(x1 + 1) * 3] = bytes(colour) * (x1 - x0 + 1)

    def line(self, x0, y0, x1, y1, width, colour):
        steps = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        for i in range(steps):
            t = i / steps
            self.circle(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t, width / 2, colour)

    def vase(self, colour):
        for y in range(330, 470):
            t = (y - 330) / 140
            half = 70 - 25 * math.sin(t * math.pi) + 10 * t
            x0, x1 = int(320 - half), int(320 + half)
            shade = bytes(max(0, int(c * (0.85 + 0.15 * math.cos(t * 3)))) for c in colour)
            self.px[y][x0 * 3:(x1 + 1) * 3] = shade * (x1 - x0 + 1)

    def png(self):
        raw = b"".join(b"\x00" + bytes(row) for row in self.px)

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def flower(canvas, x, y, size, petals, petal, centre):
    for k in range(petals):
        a = 2 * math.pi * k / petals
        canvas.circle(x + math.cos(a) * size * 0.6, y + math.sin(a) * size * 0.6, size * 0.55, petal)
    canvas.circle(x, y, size * 0.4, centre)


def bouquet(name, seed, background, vase, heads):
    rng = random.Random(seed)
    canvas = Canvas(*background)
    tops = []
    for _ in range(heads["count"]):
        tops.append((320 + rng.randint(-170, 170), rng.randint(70, 250)))
    for x, y in tops:
        canvas.line(320 + rng.randint(-20, 20), 360, x, y, 5, (58, 110, 52))
    for x, y in sorted(tops, key=lambda p: p[1]):
        colour = rng.choice(heads["colours"])
        flower(canvas, x, y, rng.randint(*heads["size"]), heads["petals"], colour, heads["centre"])
    canvas.vase(vase)
    Path(__file__).with_name(f"{name}.png").write_bytes(canvas.png())


bouquet("peonies", 1, ((250, 238, 240), (236, 222, 226)), (120, 140, 170),
        {"count": 10, "colours": [(236, 150, 176), (244, 182, 200), (226, 120, 150)], "size": (34, 46), "petals": 9, "centre": (250, 214, 222)})
bouquet("tulips", 2, ((240, 246, 250), (222, 232, 240)), (200, 120, 80),
        {"count": 15, "colours": [(230, 70, 60), (250, 200, 60), (240, 120, 170), (250, 150, 60)], "size": (20, 28), "petals": 4, "centre": (120, 50, 40)})
bouquet("meadow", 3, ((246, 248, 236), (230, 236, 214)), (150, 150, 140),
        {"count": 24, "colours": [(250, 250, 250), (250, 220, 60), (150, 110, 220), (90, 140, 230)], "size": (12, 20), "petals": 7, "centre": (240, 190, 40)})
bouquet("roses", 4, ((248, 240, 236), (234, 220, 214)), (60, 60, 70),
        {"count": 12, "colours": [(180, 20, 40), (200, 30, 50), (160, 10, 30)], "size": (26, 34), "petals": 6, "centre": (120, 0, 20)})
