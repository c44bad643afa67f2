/**
 * Type-ahead at a confirmation: what was typed at a terminal before the question was shown is no
 * answer to it. A "y" typed while the command was still reading (or meant for an earlier prompt)
 * would otherwise confirm a change the operator has not seen yet.
 */
import { readSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { ReadStream, isatty } from 'node:tty';

/** What dropTypeAhead found: whether anything was dropped, and whether the input ended (Ctrl-D typed ahead). */
export interface TypeAhead {
  dropped: boolean;
  ended: boolean;
}

/**
 * Reads and drops whatever input is waiting now, without waiting for more: the stream's own buffer
 * (read ahead by it, or by an earlier question's reader), then, given the terminal's descriptor
 * `fd`, what the terminal holds, read off it until it has nothing more. Node's stream for a
 * terminal keeps its descriptor non-blocking (libuv's uv_tty_init), so that read never waits; `fd`
 * is only read behind such a stream. Not on Windows, whose console reads block.
 */
export async function dropTypeAhead(input: NodeJS.ReadableStream, fd?: number): Promise<TypeAhead> {
  const stream = input as Readable;
  let dropped = false;
  for (let chunk: Buffer | string | null; (chunk = stream.read() as Buffer | string | null) !== null; ) if (chunk.length > 0) dropped = true;
  if (fd !== undefined && input instanceof ReadStream && isatty(fd) && process.platform !== 'win32') dropped = drainTerminal(fd) || dropped;
  // a stream read to its end says so on the next tick ('end')
  await new Promise<void>((resolve) => process.nextTick(resolve));
  return { dropped, ended: stream.readableEnded };
}

/** Reads `fd` (non-blocking) until it would wait; whether anything was there. An end of input typed (Ctrl-D) is dropped too. */
function drainTerminal(fd: number): boolean {
  const buffer = Buffer.alloc(4096);
  let any = false;
  for (;;) {
    try {
      if (readSync(fd, buffer, 0, buffer.length, null) === 0) return any;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return any;
      throw e;
    }
    any = true;
  }
}
