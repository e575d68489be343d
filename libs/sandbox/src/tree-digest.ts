import { createHash } from 'node:crypto';
import { readFile, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';

/** sha256 over every path, file content and symlink target under `dir`, in a stable order: an installed dependency set's identity. */
export async function treeDigest(dir: string): Promise<string> {
  const hash = createHash('sha256');
  const walk = async (rel: string): Promise<void> => {
    const entries = (await readdir(join(dir, rel), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        hash.update(`d ${path}\n`);
        await walk(path);
      } else if (e.isSymbolicLink()) {
        hash.update(`l ${path} ${await readlink(join(dir, path))}\n`);
      } else if (e.isFile()) {
        hash.update(`f ${path} ${createHash('sha256').update(await readFile(join(dir, path))).digest('hex')}\n`);
      }
    }
  };
  await walk('');
  return hash.digest('hex');
}
