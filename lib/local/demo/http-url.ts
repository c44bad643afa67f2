/** The demo worker's URL for its own HTTP server, from HTTP_HOST and HTTP_PORT. */
import { isIPv6 } from 'node:net';

/** `http://host:port`, an IPv6 literal in brackets (`::1` → `http://[::1]:8080`). */
export const httpUrl = (host: string, port: string): string => `http://${isIPv6(host) ? `[${host}]` : host}:${port}`;
