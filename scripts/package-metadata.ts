/**
 * What a published package says about where it comes from: `repository`, `homepage` and `bugs`,
 * taken from the root package.json (one place to set them for all four packages). The build
 * (scripts/build.ts) writes them into packages/<dir>/package.json; the packaging test checks the
 * packed manifests carry them.
 */

/** The fields a package takes from the root manifest, exactly: absent there, absent in the package. */
export const ROOT_FIELDS = ['repository', 'homepage', 'bugs'] as const;

type Json = Record<string, unknown>;

/**
 * The root's `repository`, `homepage` and `bugs` for the package built into packages/<dir>/. The
 * repository gains `directory`, where the package's manifest and README live (npm links to it).
 */
export function rootMetadata(root: Json, dir: string): Json {
  const fields: Json = {};
  if (root['repository'] !== undefined) {
    const repo = root['repository'];
    // a string is npm's shorthand for { type: 'git', url }
    fields['repository'] = { ...(typeof repo === 'string' ? { type: 'git', url: repo } : (repo as Json)), directory: `packages/${dir}` };
  }
  for (const f of ['homepage', 'bugs'] as const) if (root[f] !== undefined) fields[f] = root[f];
  return fields;
}

/** `manifest` with its ROOT_FIELDS replaced by the root's (see rootMetadata), and whether that changed anything. */
export function withRootMetadata<M extends Json>(manifest: M, root: Json, dir: string): { manifest: M; changed: boolean } {
  const want = rootMetadata(root, dir);
  const next: Json = { ...manifest };
  for (const f of ROOT_FIELDS) {
    if (want[f] === undefined) delete next[f];
    else next[f] = want[f];
  }
  const changed = ROOT_FIELDS.some((f) => JSON.stringify(manifest[f]) !== JSON.stringify(next[f]));
  return { manifest: next as M, changed };
}
