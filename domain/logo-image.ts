/**
 * Whether an uploaded logo really is the image its signature says: the whole file is
 * decoded, not just its first bytes. A PNG is read by pngjs (every chunk's CRC, IHDR, the
 * palette, the zlib stream inflated and unfiltered to exactly the pixels IHDR declares); a
 * JPEG by jpeg-js (markers, tables, frame and the entropy-coded scan, not tolerant of
 * missing blocks). Its size is checked from the header before any pixel is decoded, so a
 * small file cannot declare a huge image (a decompression bomb).
 */
import { crc32, inflateSync } from 'node:zlib';

import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';

import type { LogoContentType } from './branding.ts';

/** A logo is at most this many pixels wide and high (pages show it at most 240 px wide). */
export const maxLogoSide = 2048;

export type LogoImage = { ok: true; width: number; height: number } | { ok: false; problem: string };

const sizeProblem = (width: number, height: number) =>
  width < 1 || height < 1 || width > maxLogoSide || height > maxLogoSide
    ? `it is ${width}×${height} pixels; a logo is 1 to ${maxLogoSide} pixels on each side`
    : null;

/** Decodes the bytes as `type` (which their signature said): ok with the size, or why not. */
export function checkLogoImage(bytes: Uint8Array, type: LogoContentType): LogoImage {
  return type === 'image/png'
    ? checkPng(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    : checkJpeg(bytes);
}

function checkPng(bytes: Buffer): LogoImage {
  // The first chunk must be IHDR (13 bytes): its width and height, before decoding anything.
  if (bytes.length < 33 || bytes.readUInt32BE(8) !== 13 || bytes.toString('latin1', 12, 16) !== 'IHDR')
    return { ok: false, problem: 'the PNG has no image header (IHDR)' };
  const problem = sizeProblem(bytes.readUInt32BE(16), bytes.readUInt32BE(20)) ?? pngChunkProblem(bytes);
  if (problem) return { ok: false, problem };
  try {
    const png = PNG.sync.read(bytes, { checkCRC: true });
    return { ok: true, width: png.width, height: png.height };
  } catch (error) {
    return { ok: false, problem: `the PNG does not decode (${reason(error)})` };
  }
}

/** Channels per pixel of each PNG colour type (grey, RGB, palette, grey + alpha, RGBA). */
const pngChannels: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
/** Adam7's seven passes: first column and row, column and row steps. */
const adam7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

/**
 * The file checked by our own reading before the decoder: every chunk within the file with its
 * CRC, image data (IDAT) before the end (IEND), and the IDAT stream inflating to exactly the rows
 * IHDR declares, each with a filter type of 0 to 4. pngjs's sync reader did not always refuse a
 * file with no IDAT or too few rows (fresh-clone CI runs saw both accepted), so these are not left
 * to it.
 */
function pngChunkProblem(bytes: Buffer): string | null {
  const width = bytes.readUInt32BE(16);
  const height = bytes.readUInt32BE(20);
  const bitDepth = bytes[24]!;
  const channels = pngChannels[bytes[25]!];
  const interlaced = bytes[28] === 1;
  if (!channels || ![1, 2, 4, 8, 16].includes(bitDepth))
    return 'the PNG header declares an unknown colour type or bit depth';
  const idat: Buffer[] = [];
  let at = 8;
  let ended = false;
  while (at + 12 <= bytes.length) {
    const length = bytes.readUInt32BE(at);
    const type = bytes.toString('latin1', at + 4, at + 8);
    if (at + 12 + length > bytes.length) return `the PNG's ${type} chunk runs past the end of the file`;
    if (crc32(bytes.subarray(at + 4, at + 8 + length)) !== bytes.readUInt32BE(at + 8 + length))
      return `the PNG's ${type} chunk fails its CRC`;
    if (type === 'IDAT') idat.push(bytes.subarray(at + 8, at + 8 + length));
    at += 12 + length;
    if (type === 'IEND') {
      ended = true;
      break;
    }
  }
  if (!ended) return 'the PNG is cut short (no IEND)';
  if (idat.length === 0) return 'the PNG has no image data (IDAT)';
  let raw: Buffer;
  try {
    raw = inflateSync(Buffer.concat(idat), { maxOutputLength: 64 * 1024 * 1024 });
  } catch (error) {
    return `the PNG's image data does not inflate (${reason(error)})`;
  }
  // Each row: a filter type byte, then its pixels; an interlaced image is seven smaller images in turn.
  const bitsPerPixel = bitDepth * channels;
  const passes = interlaced
    ? adam7.map(
        ([x0, y0, dx, dy]) =>
          [Math.ceil(Math.max(0, width - x0) / dx), Math.ceil(Math.max(0, height - y0) / dy)] as const,
      )
    : [[width, height] as const];
  let offset = 0;
  for (const [passWidth, passHeight] of passes) {
    if (passWidth === 0 || passHeight === 0) continue;
    const rowBytes = 1 + Math.ceil((passWidth * bitsPerPixel) / 8);
    for (let row = 0; row < passHeight; row++, offset += rowBytes) {
      if (offset + rowBytes > raw.length)
        return `the PNG's image data holds fewer rows than its header declares (${width}×${height})`;
      if (raw[offset]! > 4) return `the PNG has a row with an unknown filter type (${raw[offset]})`;
    }
  }
  if (offset !== raw.length) return `the PNG's image data holds more than its header declares (${width}×${height})`;
  return null;
}

function checkJpeg(bytes: Uint8Array): LogoImage {
  const size = jpegFrameSize(bytes);
  if (!size) return { ok: false, problem: 'the JPEG has no frame header (SOF) with its size' };
  const problem = sizeProblem(size.width, size.height);
  if (problem) return { ok: false, problem };
  try {
    const image = jpeg.decode(bytes, {
      useTArray: true,
      tolerantDecoding: false,
      maxResolutionInMP: (maxLogoSide * maxLogoSide) / 1e6,
      maxMemoryUsageInMB: 64,
    });
    if (image.width !== size.width || image.height !== size.height)
      return { ok: false, problem: 'the JPEG does not decode to the size its header declares' };
    return { ok: true, width: image.width, height: image.height };
  } catch (error) {
    return { ok: false, problem: `the JPEG does not decode (${reason(error)})` };
  }
}

/** The size a JPEG's first frame header (SOF0…SOF15 but DHT, JPG and DAC) declares, walking the marker segments from SOI; null when there is none. */
function jpegFrameSize(bytes: Uint8Array): { width: number; height: number } | null {
  let at = 2;
  while (at + 4 <= bytes.length) {
    if (bytes[at] !== 0xff) return null;
    const marker = bytes[at + 1]!;
    if (marker === 0xff) {
      at += 1;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return null;
    const length = (bytes[at + 2]! << 8) | bytes[at + 3]!;
    if (length < 2) return null;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (at + 9 > bytes.length) return null;
      return { height: (bytes[at + 5]! << 8) | bytes[at + 6]!, width: (bytes[at + 7]! << 8) | bytes[at + 8]! };
    }
    at += 2 + length;
  }
  return null;
}

function reason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').slice(0, 120);
}
