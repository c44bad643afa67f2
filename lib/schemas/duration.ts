/**
 * A duration as a user types it on a command line: the one parser of every duration flag, the
 * CLI's (`--for`, `--timeout`, `watch --interval`) and local mode's (`conclave-local --tick`,
 * `npm start -- --tick`), so each takes the same forms and refuses the same way.
 */
import * as z from 'zod';

/** What every duration flag takes, said the same in each one's error. */
export const DURATION_FORMS = 'a duration such as 90s, 1.5s, 500ms, 10m, 2h or 1h30m (units ms, s, m, h)';
const DURATION = /^(?=\d)(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?$/;

/**
 * `90s`, `1.5s`, `500ms`, `10m`, `2h`, `1h30m` → milliseconds; `max` and `min` are the flag's own
 * bounds. A bare number is refused: `--for 30` could mean seconds or minutes, and a pin that
 * quietly lapses is worse than an error saying `30s`.
 */
export const durationFlag = (max: { ms: number; text: string }, min?: { ms: number; text: string }) =>
  z
    .string()
    .trim()
    .transform((s, ctx) => {
      const m = DURATION.exec(s);
      if (!m) {
        const bare = /^\d+(\.\d+)?$/.test(s) ? `; a number alone has no unit: ${s} seconds is ${s}s` : '';
        ctx.addIssue({ code: 'custom', message: `must be ${DURATION_FORMS}${bare}` });
        return z.NEVER;
      }
      const [h, min_, sec, ms] = [m[1], m[2], m[3], m[4]].map((x) => Number(x ?? 0)) as [number, number, number, number];
      return Math.round(((h * 60 + min_) * 60 + sec) * 1000 + ms);
    })
    .pipe((min ? z.number().min(min.ms, `must be at least ${min.text}`) : z.number().positive('must be longer than 0s')).max(max.ms, `must be at most ${max.text}`));

/**
 * How often local mode's coordinator reconciles (`conclave-local --tick`, `npm start -- --tick`):
 * at least 10 ms (startLocalConclave's tickEveryMs), at most a day (a Node timer past 2^31 - 1 ms,
 * 24.8 days, fires at once, every time).
 */
export const TickDuration = durationFlag({ ms: 86_400_000, text: '24h (a day)' }, { ms: 10, text: '10ms' });
