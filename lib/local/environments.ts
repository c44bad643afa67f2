/**
 * A function's execution environments, as Lambda keeps them: an invocation runs in an idle one, or
 * in one made for it when every one is busy (a cold start); never two at once in one. What a
 * handler keeps on its instance between the calls of one invocation (the Powertools Logger's
 * context: injectLambdaContext's request id, the keys a record appends) is then that invocation's
 * alone, as in Lambda, though local mode runs every invocation in one process.
 */
export interface Environments<H> {
  /** Runs `fn` with an environment's handler that no other invocation uses until `fn` ends. */
  run<R>(fn: (handler: H) => Promise<R>): Promise<R>;
  /** The environments made so far (for tests: one per invocation in flight at the busiest). */
  readonly made: number;
}

/** Environments of one function; `make` builds one's handler (its own Logger and Metrics). The first is made now: a handler that cannot be built fails the start. */
export async function environments<H>(make: () => Promise<H>): Promise<Environments<H>> {
  const idle: H[] = [await make()];
  let made = 1;
  return {
    async run(fn) {
      let handler = idle.pop();
      if (handler === undefined) {
        handler = await make();
        made++;
      }
      try {
        return await fn(handler);
      } finally {
        idle.push(handler); // (a thrown invocation leaves its environment usable, as Lambda's does)
      }
    },
    get made() {
      return made;
    },
  };
}
