import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, type Readable, type Writable } from 'node:stream';

/**
 * Where export files live. A file is written to a temporary object and published under
 * its key only once complete (`commit`), so a reader never sees half a file and a
 * writer that dies leaves only a temporary object behind. The local-folder
 * implementation below is the default (DATA_DIR/exports); in production an
 * S3-compatible bucket (multipart upload as the temporary object, completed on commit;
 * a lifecycle rule for expiry) implements the same seam.
 */
export interface ExportStorage {
  /** A stream to a new temporary object; `commit` publishes it under `key`, `abort` drops it. */
  create(key: string): {
    stream: Writable;
    commit(): Promise<{ size: number; sha256: string }>;
    abort(): Promise<void>;
  };
  open(key: string): Readable;
  remove(key: string): Promise<void>;
  /**
   * Drops temporary objects not written to since `before` (left by a writer that died:
   * a worker killed mid-export). A live writer touches its object every page, well
   * within the heartbeat timeout. Returns how many were dropped.
   */
  sweepTemporary(before: Date): Promise<number>;
}

export function localExportStorage(root: string): ExportStorage {
  const file = (key: string) => {
    if (!/^[a-z0-9_.-]+$/.test(key)) throw new Error(`bad export storage key ${key}`);
    return path.join(root, key);
  };
  return {
    create(key) {
      const target = file(key);
      const temp = `${target}.${randomBytes(6).toString('hex')}.partial`;
      const hash = createHash('sha256');
      let size = 0;
      // Chunks are hashed as they pass into the temporary file.
      mkdirSync(root, { recursive: true });
      const stream = new PassThrough();
      const out = createWriteStream(temp);
      stream.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        size += chunk.length;
      });
      const finished = new Promise<void>((resolve, reject) => {
        out.on('error', reject);
        out.on('finish', () => resolve());
      });
      stream.pipe(out);
      finished.catch(() => undefined);
      return {
        stream,
        async commit() {
          if (!stream.writableEnded) stream.end();
          await finished;
          await rename(temp, target);
          const written = (await stat(target)).size;
          if (written !== size) throw new Error(`export file ${key}: ${written} bytes on disk, ${size} written`);
          return { size, sha256: hash.digest('hex') };
        },
        async abort() {
          stream.destroy();
          await rm(temp, { force: true });
        },
      };
    },
    open: (key) => createReadStream(file(key)),
    remove: (key) => rm(file(key), { force: true }),
    async sweepTemporary(before) {
      let names: string[];
      try {
        names = await readdir(root);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
        throw error;
      }
      let dropped = 0;
      for (const name of names) {
        if (!name.endsWith('.partial')) continue;
        const info = await stat(path.join(root, name)).catch(() => null);
        if (!info || info.mtime >= before) continue;
        await rm(path.join(root, name), { force: true });
        dropped++;
      }
      return dropped;
    },
  };
}

/**
 * The storage as a full disk answers it: each file is written whole, then refused when it is
 * published (ENOSPC), its temporary object dropped. Only for a sandbox export made by
 * POST /v1/test_helpers/exports (activities/export.ts): every attempt of its writer fails.
 */
export function failingToPublish(storage: ExportStorage): ExportStorage {
  return {
    ...storage,
    create(key) {
      const file = storage.create(key);
      return {
        ...file,
        async commit() {
          await file.abort();
          throw Object.assign(
            new Error(`export file ${key}: no space left on device (sandbox test helper: the storage refuses it)`),
            { code: 'ENOSPC' },
          );
        },
      };
    },
  };
}
