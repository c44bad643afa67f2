/**
 * Ports for servers that bind them later (the workers behind HAProxy): below the kernel's
 * ephemeral range, where no outgoing connection's source port can take them meanwhile.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { portToBindLater } from '../../lib/local/dynamodb-local.js';

const ephemeralLow = (): number => {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 32_768;
  }
};

describe('portToBindLater', () => {
  it('picks distinct free ports below the ephemeral range, never one already taken, each one that can be listened on', async () => {
    const taken = new Set<number>();
    const ports: number[] = [];
    for (let i = 0; i < 20; i++) ports.push(await portToBindLater(taken));
    expect(new Set(ports).size).toBe(20);
    expect([...taken].sort()).toEqual([...ports].sort());
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(1_024);
      expect(p).toBeLessThan(Math.min(ephemeralLow(), 32_768));
    }
    // each can be bound now
    for (const p of ports.slice(0, 5)) {
      await new Promise<void>((resolve, reject) => {
        const srv = createServer();
        srv.once('error', reject);
        srv.listen(p, '127.0.0.1', () => srv.close(() => resolve()));
      });
    }
  });

  it('never picks a port some server listens on now', async () => {
    // hold 300 ports of the range it picks from (a fortieth of it), then pick 200: none of the held ones comes back
    // (a pick that did not check would return about five of them)
    const held = await Promise.all(
      Array.from({ length: 300 }, () =>
        new Promise<{ port: number; close: () => Promise<void> }>((resolve) => {
          const tryOne = (): void => {
            const srv = createServer();
            const port = 20_768 + Math.floor(Math.random() * 12_000);
            srv.once('error', tryOne);
            srv.listen(port, '127.0.0.1', () => resolve({ port, close: () => new Promise((r) => srv.close(() => r())) }));
          };
          tryOne();
        }),
      ),
    );
    try {
      const heldPorts = new Set(held.map((h) => h.port));
      for (let i = 0; i < 200; i++) expect(heldPorts.has(await portToBindLater())).toBe(false);
    } finally {
      await Promise.all(held.map((h) => h.close()));
    }
  });
});
