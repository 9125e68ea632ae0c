/**
 * Whether an uploaded logo really is the image its signature says: the whole file is
 * decoded, not just its first bytes. A PNG is read by pngjs (every chunk's CRC, IHDR, the
 * palette, the zlib stream inflated and unfiltered to exactly the pixels IHDR declares); a
 * JPEG by jpeg-js (markers, tables, frame and the entropy-coded scan, not tolerant of
 * missing blocks). Its size is checked from the header before any pixel is decoded, so a
 * small file cannot declare a huge image (a decompression bomb).
 */
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import type { LogoContentType } from './branding.ts';

/** A logo is at most this many pixels wide and high (pages show it at most 240 px wide). */
export const maxLogoSide = 2048;

export type LogoImage = { ok: true; width: number; height: number } | { ok: false; problem: string };

const sizeProblem = (width: number, height: number) =>
  width < 1 || height < 1 || width > maxLogoSide || height > maxLogoSide ? `it is ${width}×${height} pixels; a logo is 1 to ${maxLogoSide} pixels on each side` : null;

/** Decodes the bytes as `type` (which their signature said): ok with the size, or why not. */
export function checkLogoImage(bytes: Uint8Array, type: LogoContentType): LogoImage {
  return type === 'image/png' ? checkPng(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) : checkJpeg(bytes);
}

function checkPng(bytes: Buffer): LogoImage {
  // The first chunk must be IHDR (13 bytes): its width and height, before decoding anything.
  if (bytes.length < 33 || bytes.readUInt32BE(8) !== 13 || bytes.toString('latin1', 12, 16) !== 'IHDR') return { ok: false, problem: 'the PNG has no image header (IHDR)' };
  const problem = sizeProblem(bytes.readUInt32BE(16), bytes.readUInt32BE(20)) ?? pngChunkProblem(bytes);
  if (problem) return { ok: false, problem };
  try {
    const png = PNG.sync.read(bytes, { checkCRC: true });
    return { ok: true, width: png.width, height: png.height };
  } catch (error) {
    return { ok: false, problem: `the PNG does not decode (${reason(error)})` };
  }
}

/**
 * The chunk layout, walked before decoding: every chunk within the file, image data (IDAT) before
 * the end (IEND). pngjs's sync reader did not always refuse a file with no IDAT (CI once saw such
 * a file accepted), so that is checked here, not left to the decoder.
 */
function pngChunkProblem(bytes: Buffer): string | null {
  let at = 8;
  let imageData = false;
  while (at + 12 <= bytes.length) {
    const length = bytes.readUInt32BE(at);
    const type = bytes.toString('latin1', at + 4, at + 8);
    if (at + 12 + length > bytes.length) return `the PNG's ${type} chunk runs past the end of the file`;
    if (type === 'IDAT') imageData = true;
    if (type === 'IEND') return imageData ? null : 'the PNG has no image data (IDAT)';
    at += 12 + length;
  }
  return 'the PNG is cut short (no IEND)';
}

function checkJpeg(bytes: Uint8Array): LogoImage {
  const size = jpegFrameSize(bytes);
  if (!size) return { ok: false, problem: 'the JPEG has no frame header (SOF) with its size' };
  const problem = sizeProblem(size.width, size.height);
  if (problem) return { ok: false, problem };
  try {
    const image = jpeg.decode(bytes, { useTArray: true, tolerantDecoding: false, maxResolutionInMP: (maxLogoSide * maxLogoSide) / 1e6, maxMemoryUsageInMB: 64 });
    if (image.width !== size.width || image.height !== size.height) return { ok: false, problem: 'the JPEG does not decode to the size its header declares' };
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
