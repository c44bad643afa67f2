/**
 * A package registry on loopback for the consumer test, so that a fresh project outside the
 * repository installs our tarballs and their dependencies as a user's would, with no network.
 *
 * It serves every package version this repository's lockfile names, from npm's own cache (where
 * `npm ci` left each tarball, addressed by the lockfile's integrity): a package document per
 * name (versions, dependencies, peers, bins, engines from the lockfile) and the tarballs.
 * Nothing else exists in it, so a consumer's dependency must be one the repository installs.
 */
import { readFileSync, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { homedir } from 'node:os';
import { join } from 'node:path';
import semver from 'semver';

interface LockEntry {
  name?: string;
  version?: string;
  integrity?: string;
  link?: boolean;
  bundleDependencies?: string[];
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  bin?: Record<string, string>;
  engines?: Record<string, string>;
  os?: string[];
  cpu?: string[];
  license?: string;
  hasInstallScript?: boolean;
}

export interface LoopbackRegistry {
  /** `http://127.0.0.1:<port>/`: pass as `--registry`. */
  readonly url: string;
  /** Tarballs asked for that the cache does not hold (platform packages of other systems are expected here). */
  readonly missing: string[];
  stop(): Promise<void>;
}

/** The cacache content path of a tarball with this integrity (`sha512-<base64>`). */
function contentPath(cache: string, integrity: string): string | undefined {
  for (const one of integrity.split(/\s+/)) {
    const [algo, b64] = one.split('-', 2) as [string, string];
    const hex = Buffer.from(b64, 'base64').toString('hex');
    const path = join(cache, '_cacache', 'content-v2', algo, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
    if (existsSync(path)) return path;
  }
  return undefined;
}

export async function startLoopbackRegistry(lockfile: string, cache = process.env['npm_config_cache'] ?? join(homedir(), '.npm')): Promise<LoopbackRegistry> {
  const lock = JSON.parse(readFileSync(lockfile, 'utf8')) as { packages: Record<string, LockEntry> };
  const byName = new Map<string, Map<string, LockEntry>>();
  for (const [key, entry] of Object.entries(lock.packages)) {
    if (!key || entry.link || !entry.version || !entry.integrity) continue;
    const name = entry.name ?? key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    if (!byName.has(name)) byName.set(name, new Map());
    byName.get(name)!.set(entry.version, entry);
  }
  const missing: string[] = [];
  let base = '';
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    const tarball = /^\/-\/tarball\/(.+)\/([^/]+)\.tgz$/.exec(path);
    if (tarball) {
      const entry = byName.get(tarball[1]!)?.get(tarball[2]!);
      const file = entry?.integrity ? contentPath(cache, entry.integrity) : undefined;
      if (!file) {
        missing.push(`${tarball[1]}@${tarball[2]}`);
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(readFileSync(file));
      return;
    }
    const name = path.slice(1);
    const versions = byName.get(name);
    if (!versions) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    const doc = {
      name,
      'dist-tags': { latest: semver.rsort([...versions.keys()])[0] },
      versions: Object.fromEntries(
        [...versions].map(([version, e]) => [
          version,
          {
            name,
            version,
            dependencies: e.dependencies,
            optionalDependencies: e.optionalDependencies,
            peerDependencies: e.peerDependencies,
            peerDependenciesMeta: e.peerDependenciesMeta,
            bundleDependencies: e.bundleDependencies,
            bin: e.bin,
            engines: e.engines,
            os: e.os,
            cpu: e.cpu,
            license: e.license,
            hasInstallScript: e.hasInstallScript,
            dist: { tarball: `${base}-/tarball/${name}/${version}.tgz`, integrity: e.integrity },
          },
        ]),
      ),
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
  return {
    url: base,
    missing,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
