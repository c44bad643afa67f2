/**
 * DynamoDB numbers: decimal, up to 38 significant digits, magnitude 1E-130 to under 1E+126,
 * stored and returned in one canonical form (`01.500` → `1.5`, `1e3` → `1000`, `-0` → `0`), as
 * DynamoDB Local returns them. Exact: never through a float, except for the safe integers that
 * are almost every number Conclave writes (epoch ms, revisions, tokens).
 */
import { validationError } from './errors.js';

const MAX_DIGITS = 38;

/**
 * Whether `s` is already a canonical integer: `0`, or up to 38 digits (DynamoDB's precision, far
 * inside its range) with no leading zero. Epoch ms, revisions and fencing tokens all are.
 */
function isCanonicalInt(s: string): boolean {
  const neg = s.charCodeAt(0) === 45;
  const from = neg ? 1 : 0;
  const n = s.length - from;
  if (n < 1 || n > MAX_DIGITS) return false;
  const first = s.charCodeAt(from);
  if (first === 48) return n === 1 && !neg;
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}
const NUMBER = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** A number as sign, significant digits (no leading or trailing zeros; '' for zero) and exponent. */
interface Decimal {
  neg: boolean;
  digits: string;
  exp: number;
}

function parse(s: string): Decimal | undefined {
  const m = NUMBER.exec(s);
  if (!m) return undefined;
  const int = m[2] ?? '';
  const frac = m[3] ?? '';
  if (int === '' && frac === '') return undefined;
  let digits = (int + frac).replace(/^0+/, '');
  let exp = (m[4] ? Number(m[4]) : 0) - frac.length;
  if (!Number.isFinite(exp)) return undefined;
  const trimmed = digits.replace(/0+$/, '');
  exp += digits.length - trimmed.length;
  digits = trimmed;
  return { neg: m[1] === '-' && digits !== '', digits, exp: digits === '' ? 0 : exp };
}

/** Plain decimal notation, after checking precision and range. */
function format(d: Decimal): string {
  if (d.digits === '') return '0';
  if (d.digits.length > MAX_DIGITS) throw validationError('Attempting to store more than 38 significant digits in a Number');
  const magnitude = d.digits.length + d.exp - 1; // the exponent in scientific notation
  if (magnitude > 125) throw validationError('Number overflow. Attempting to store a number with magnitude larger than supported range');
  if (magnitude < -130) throw validationError('Number underflow. Attempting to store a number with magnitude smaller than supported range');
  let out: string;
  if (d.exp >= 0) out = d.digits + '0'.repeat(d.exp);
  else if (d.digits.length > -d.exp) out = `${d.digits.slice(0, d.digits.length + d.exp)}.${d.digits.slice(d.digits.length + d.exp)}`;
  else out = `0.${'0'.repeat(-d.exp - d.digits.length)}${d.digits}`;
  return d.neg ? `-${out}` : out;
}

/** The canonical form of a number DynamoDB accepts; ValidationException for anything else. */
export function canonicalNumber(s: string): string {
  if (typeof s !== 'string') throw validationError('A value provided cannot be converted into a number');
  if (isCanonicalInt(s)) return s;
  const d = parse(s);
  if (!d) throw validationError('A value provided cannot be converted into a number');
  return format(d);
}

/** value = mantissa × 10^exp */
function scaled(s: string): { m: bigint; exp: number } {
  const d = parse(s)!;
  return { m: d.digits === '' ? 0n : BigInt(d.neg ? `-${d.digits}` : d.digits), exp: d.exp };
}

function align(a: string, b: string): [bigint, bigint, number] {
  const x = scaled(a);
  const y = scaled(b);
  const exp = Math.min(x.exp, y.exp);
  return [x.m * 10n ** BigInt(x.exp - exp), y.m * 10n ** BigInt(y.exp - exp), exp];
}

const isSmallInt = (s: string) => s.length <= 15 && !s.includes('.');

/** Compares two canonical integers (no `.`: canonical numbers have no exponent): by sign, then length, then digits. */
function compareInts(a: string, b: string): number {
  const na = a.charCodeAt(0) === 45;
  const nb = b.charCodeAt(0) === 45;
  if (na !== nb) return na ? -1 : 1;
  const order = a.length !== b.length ? a.length - b.length : a < b ? -1 : 1;
  return na ? -order : order;
}

/** Compares two canonical numbers: negative, zero or positive. */
export function compareNumbers(a: string, b: string): number {
  if (a === b) return 0;
  if (isSmallInt(a) && isSmallInt(b)) return Number(a) - Number(b);
  if (!a.includes('.') && !b.includes('.')) return compareInts(a, b);
  const [x, y] = align(a, b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** a + b (or a − b), exactly, in canonical form; ValidationException past 38 digits. */
export function addNumbers(a: string, b: string, subtract = false): string {
  if (isSmallInt(a) && isSmallInt(b)) {
    const r = subtract ? Number(a) - Number(b) : Number(a) + Number(b);
    if (Number.isSafeInteger(r)) return String(r);
  }
  const [x, y, exp] = align(a, b);
  const sum = subtract ? x - y : x + y;
  const neg = sum < 0n;
  const raw = (neg ? -sum : sum).toString();
  const digits = raw.replace(/0+$/, '');
  if (digits === '') return '0';
  const d: Decimal = { neg, digits, exp: exp + raw.length - digits.length };
  if (digits.length > MAX_DIGITS) throw validationError('DynamoDB only supports precision up to 38 digits');
  return format(d);
}

/** Significant digits of a canonical number (for item sizes). */
export function significantDigits(s: string): number {
  let n = 0;
  let started = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) continue;
    if (c !== 48) started = true;
    if (started) n++;
  }
  return n;
}
