/**
 * A command held on its AWS credentials is told so. The AWS SDK gets a client's credentials before
 * it sends a request, and gives the provider no time limit: a credential_process waiting for input
 * it never gets, an expired SSO login, or instance metadata out of reach hold every request of the
 * command, with nothing printed, until Ctrl-C. --request-timeout does not cover that wait: it
 * bounds a request once sent.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Clock } from '../clock.js';

/** How long a request may wait for its credentials before the command says so: a provider that answers (an SSO token read, an STS call) takes a second or two. */
export const CREDENTIALS_TOLD_AFTER_MS = 10_000;

/** What a command held on its credentials says, once a wait: the profile it reads and how to check it alone. */
export function credentialsWaitLine(waitedMs: number, profile: string | undefined): string {
  const asked = profile ? `profile ${profile}` : 'the default profile, or the environment';
  const check = `aws sts get-caller-identity${profile ? ` --profile ${profile}` : ''}`;
  return (
    `waiting for AWS credentials: the AWS SDK's credential provider (${asked}) has not answered in ${Math.round(waitedMs / 1000)} s, and no request is sent until it does - ` +
    `a credential_process waiting for input, an SSO login to renew (aws sso login) or an instance metadata service out of reach hold it; check them with \`${check}\`. Ctrl-C stops the command`
  );
}

/**
 * Calls `tell` when a request of `client` has waited `afterMs` on `clock` for its credentials: once
 * a wait, told again only once credentials have come and a later wait begins (a long `watch` whose
 * credentials expire). The SDK resolves them in the serialize step, so a request that reaches the
 * build step has them; one that settles before has none to wait for.
 */
export function tellCredentialsWait(client: DynamoDBClient, clock: Pick<Clock, 'setTimer'>, tell: (waitedMs: number) => void, afterMs = CREDENTIALS_TOLD_AFTER_MS): void {
  const waiting = new WeakMap<object, { cancel(): void }>();
  let told = false;
  const settled = (request: object) => {
    waiting.get(request)?.cancel();
    waiting.delete(request);
  };
  const stack = client.middlewareStack as unknown as { add(mw: unknown, o: object): void };
  stack.add(
    (next: (a: unknown) => Promise<unknown>, request: object) => async (args: unknown) => {
      const timer = clock.setTimer(afterMs, () => {
        if (told) return;
        told = true;
        tell(afterMs);
      });
      waiting.set(request, timer);
      try {
        return await next(args);
      } finally {
        settled(request);
      }
    },
    { step: 'initialize', priority: 'high', name: 'conclaveCredentialsWait' },
  );
  stack.add(
    (next: (a: unknown) => Promise<unknown>, request: object) => (args: unknown) => {
      settled(request);
      told = false;
      return next(args);
    },
    { step: 'build', priority: 'high', name: 'conclaveCredentialsCame' },
  );
}
