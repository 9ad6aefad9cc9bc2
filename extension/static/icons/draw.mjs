// Draws the toolbar icons (two paths, WiFi and cellular, joining into one) as PNGs: node draw.mjs
// The PNGs are committed; rerun this only to change the drawing.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

// Shapes in a 0..1 square: a rounded-square background, two strokes meeting at a point, one stroke leaving it.
const BG = [31, 58, 95];
const WIFI = [108, 195, 255];
const CELL = [255, 180, 84];
const JOINED = [255, 255, 255];
const JOIN = [0.56, 0.5];
const strokes = [
  { from: [0.2, 0.25], to: JOIN, color: WIFI },
  { from: [0.2, 0.75], to: JOIN, color: CELL },
  { from: JOIN, to: [0.82, 0.5], color: JOINED },
];

function segmentDistance([px, py], [ax, ay], [bx, by]) {
  const dx = bx - ax;
  const dy = by - ay;
  const t = Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)));
  return Math.hypot(px - (ax + t * dx), py - (ay + t * dy));
}

function insideRoundedSquare([x, y], r) {
  const cx = Math.min(Math.max(x, r), 1 - r);
  const cy = Math.min(Math.max(y, r), 1 - r);
  return Math.hypot(x - cx, y - cy) <= r;
}

// Colour of one point: later shapes paint over earlier ones.
function shade(p, width) {
  if (!insideRoundedSquare(p, 0.2)) return null;
  let c = BG;
  for (const s of strokes) if (segmentDistance(p, s.from, s.to) <= width / 2) c = s.color;
  return c;
}

function draw(size) {
  const ss = 4; // supersampling per axis
  const width = size <= 16 ? 0.16 : 0.12; // thicker strokes where pixels are few
  const rgba = Buffer.alloc(size * size * 4);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      let r = 0, g = 0, b = 0, a = 0;
      for (let sy = 0; sy < ss; sy++) {
        for (let sx = 0; sx < ss; sx++) {
          const c = shade([(x + (sx + 0.5) / ss) / size, (y + (sy + 0.5) / ss) / size], width);
          if (c === null) continue;
          r += c[0]; g += c[1]; b += c[2]; a++;
        }
      }
      const i = (y * size + x) * 4;
      if (a > 0) {
        rgba[i] = Math.round(r / a);
        rgba[i + 1] = Math.round(g / a);
        rgba[i + 2] = Math.round(b / a);
        rgba[i + 3] = Math.round((255 * a) / (ss * ss));
      }
    }
  }
  return png(size, rgba);
}

function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body));
  return Buffer.concat([len, body, crc]);
}

function png(size, rgba) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  const rows = [];
  for (let y = 0; y < size; y++) rows.push(Buffer.from([0]), rgba.subarray(y * size * 4, (y + 1) * size * 4));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(Buffer.concat(rows), { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

for (const size of [16, 32, 48, 128]) fs.writeFileSync(path.join(here, `${size}.png`), draw(size));
