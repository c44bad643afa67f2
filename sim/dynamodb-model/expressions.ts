/**
 * DynamoDB's expression grammar — condition (also key condition and filter), update and
 * projection expressions — parsed once per distinct text and cached: Conclave's code builds its
 * expressions from a fixed set of templates with `#name` and `:value` placeholders, so after the
 * first few requests no request parses anything. The placeholders are bound per request
 * (evaluate.ts).
 *
 * Precedence, as DynamoDB documents it: comparisons, IN and BETWEEN and functions bind tightest,
 * then NOT, then AND, then OR; parentheses group. An update's SET value is one operand or two
 * joined by `+` or `-` (`a + b - c` is a syntax error there too).
 */
import { validationError } from './errors.js';
import { isReservedWord } from './reserved-words.js';

/** A path element: a literal attribute name, a `#name` placeholder (starts with `#`), or a list index. */
export type PathElement = string | number;

/** A document path: `a.b[2]`, `#n.x`. */
export interface Path {
  readonly kind: 'path';
  readonly els: readonly PathElement[];
  /** As written (messages, the distinct-operands check). */
  readonly text: string;
}

/** A value in an expression: a path, a `:value`, or a function of them. */
export type Operand =
  | Path
  | { readonly kind: 'value'; readonly name: string }
  | { readonly kind: 'size'; readonly path: Path }
  | { readonly kind: 'if_not_exists'; readonly path: Path; readonly fallback: Operand }
  | { readonly kind: 'list_append'; readonly a: Operand; readonly b: Operand }
  | { readonly kind: 'arith'; readonly op: '+' | '-'; readonly a: Operand; readonly b: Operand };

/** The comparison operators. */
export type Comparator = '=' | '<>' | '<' | '<=' | '>' | '>=';

/** A condition, key condition or filter expression. */
export type Condition =
  | { readonly kind: 'cmp'; readonly op: Comparator; readonly a: Operand; readonly b: Operand }
  | { readonly kind: 'between'; readonly a: Operand; readonly lo: Operand; readonly hi: Operand }
  | { readonly kind: 'in'; readonly a: Operand; readonly list: readonly Operand[] }
  | { readonly kind: 'exists'; readonly path: Path; readonly not: boolean }
  | { readonly kind: 'type'; readonly path: Path; readonly type: Operand }
  | { readonly kind: 'begins_with'; readonly a: Operand; readonly b: Operand }
  | { readonly kind: 'contains'; readonly a: Operand; readonly b: Operand }
  | { readonly kind: 'and' | 'or'; readonly a: Condition; readonly b: Condition }
  | { readonly kind: 'not'; readonly a: Condition };

/** An update expression's four clauses, each action in the order written. */
export interface UpdateAst {
  readonly set: readonly { readonly path: Path; readonly value: Operand }[];
  readonly remove: readonly Path[];
  readonly add: readonly { readonly path: Path; readonly value: Operand }[];
  readonly delete: readonly { readonly path: Path; readonly value: Operand }[];
}

/** A parsed expression and the placeholders it uses (checked against the request's maps). */
export interface Parsed<T> {
  readonly ast: T;
  readonly names: readonly string[];
  readonly values: readonly string[];
}

/** Which parameter an expression came in: DynamoDB's messages name it. */
export type ExpressionKind = 'ConditionExpression' | 'KeyConditionExpression' | 'FilterExpression' | 'UpdateExpression' | 'ProjectionExpression';

interface Token {
  readonly t: 'id' | 'name' | 'value' | 'num' | 'op' | 'end';
  readonly v: string;
  readonly at: number;
}

class SyntaxFailure {
  constructor(readonly message: string) {}
}

const isIdStart = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isIdChar = (c: number) => isIdStart(c) || (c >= 48 && c <= 57);
const isDigit = (c: number) => c >= 48 && c <= 57;

function tokenize(s: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c === 32 || c === 9 || c === 10 || c === 13) {
      i++;
      continue;
    }
    const start = i;
    if (c === 35 || c === 58) {
      // #name, :value
      i++;
      while (i < s.length && isIdChar(s.charCodeAt(i))) i++;
      if (i === start + 1) throw new SyntaxFailure(`Syntax error; token: "${s[start]}", near: "${s.slice(start, start + 10)}"`);
      out.push({ t: c === 35 ? 'name' : 'value', v: s.slice(start, i), at: start });
      continue;
    }
    if (isIdStart(c)) {
      while (i < s.length && isIdChar(s.charCodeAt(i))) i++;
      out.push({ t: 'id', v: s.slice(start, i), at: start });
      continue;
    }
    if (isDigit(c)) {
      while (i < s.length && isDigit(s.charCodeAt(i))) i++;
      out.push({ t: 'num', v: s.slice(start, i), at: start });
      continue;
    }
    const two = s.slice(i, i + 2);
    if (two === '<>' || two === '<=' || two === '>=') {
      out.push({ t: 'op', v: two, at: i });
      i += 2;
      continue;
    }
    if ('=<>()[],.+-'.includes(s[i]!)) {
      out.push({ t: 'op', v: s[i]!, at: i });
      i++;
      continue;
    }
    throw new SyntaxFailure(`Invalid character encountered; character: "${s[i]}", near: "${s.slice(Math.max(0, i - 5), i + 5)}"`);
  }
  out.push({ t: 'end', v: '<EOF>', at: s.length });
  return out;
}

const CONDITION_FUNCTIONS = new Set(['attribute_exists', 'attribute_not_exists', 'attribute_type', 'begins_with', 'contains']);
const UPDATE_FUNCTIONS = new Set(['if_not_exists', 'list_append']);
const COMPARATORS = new Set(['=', '<>', '<', '<=', '>', '>=']);

class Parser {
  private i = 0;
  readonly names = new Set<string>();
  readonly values = new Set<string>();
  private readonly toks: Token[];

  constructor(private readonly src: string) {
    this.toks = tokenize(src);
  }

  private peek(k = 0): Token {
    return this.toks[Math.min(this.i + k, this.toks.length - 1)]!;
  }
  private next(): Token {
    return this.toks[this.i++]!;
  }
  private fail(tok: Token = this.peek()): never {
    throw new SyntaxFailure(`Syntax error; token: "${tok.v}", near: "${this.src.slice(Math.max(0, tok.at - 8), tok.at + 8)}"`);
  }
  private isOp(v: string, k = 0): boolean {
    const t = this.peek(k);
    return t.t === 'op' && t.v === v;
  }
  private isKeyword(kw: string): boolean {
    const t = this.peek();
    return t.t === 'id' && t.v.toUpperCase() === kw;
  }
  private expectOp(v: string): void {
    if (!this.isOp(v)) this.fail();
    this.i++;
  }
  atEnd(): boolean {
    return this.peek().t === 'end';
  }
  expectEnd(): void {
    if (!this.atEnd()) this.fail();
  }

  path(): Path {
    const start = this.peek();
    const els: PathElement[] = [this.pathName()];
    for (;;) {
      if (this.isOp('.')) {
        this.i++;
        els.push(this.pathName());
      } else if (this.isOp('[')) {
        this.i++;
        const n = this.next();
        if (n.t !== 'num') this.fail(n);
        this.expectOp(']');
        els.push(Number(n.v));
      } else break;
    }
    const end = this.peek();
    return { kind: 'path', els, text: this.src.slice(start.at, end.at).trim() };
  }

  private pathName(): string {
    const t = this.next();
    if (t.t === 'name') {
      this.names.add(t.v);
      return t.v;
    }
    if (t.t !== 'id') this.fail(t);
    if (isReservedWord(t.v)) throw new SyntaxFailure(`Attribute name is a reserved keyword; reserved keyword: ${t.v}`);
    return t.v;
  }

  private value(): Operand {
    const t = this.next();
    if (t.t !== 'value') this.fail(t);
    this.values.add(t.v);
    return { kind: 'value', name: t.v };
  }

  /** A function call's name, when the next tokens are `name (`. */
  private functionName(): string | undefined {
    const t = this.peek();
    return t.t === 'id' && this.isOp('(', 1) ? t.v : undefined;
  }

  // ---- conditions ----

  condition(): Condition {
    let c = this.and();
    while (this.isKeyword('OR')) {
      this.i++;
      c = { kind: 'or', a: c, b: this.and() };
    }
    return c;
  }

  private and(): Condition {
    let c = this.not();
    while (this.isKeyword('AND')) {
      this.i++;
      c = { kind: 'and', a: c, b: this.not() };
    }
    return c;
  }

  private not(): Condition {
    if (this.isKeyword('NOT')) {
      this.i++;
      return { kind: 'not', a: this.not() };
    }
    return this.primary();
  }

  private primary(): Condition {
    if (this.isOp('(')) {
      this.i++;
      const c = this.condition();
      this.expectOp(')');
      return c;
    }
    const fn = this.functionName();
    if (fn !== undefined && fn !== 'size') {
      if (UPDATE_FUNCTIONS.has(fn)) throw new SyntaxFailure(`The function is not allowed in a condition expression; function: ${fn}`);
      if (!CONDITION_FUNCTIONS.has(fn)) throw new SyntaxFailure(`Invalid function name; function: ${fn}`);
      this.i += 2;
      let c: Condition;
      if (fn === 'attribute_exists' || fn === 'attribute_not_exists') c = { kind: 'exists', path: this.path(), not: fn === 'attribute_not_exists' };
      else if (fn === 'attribute_type') {
        const path = this.path();
        this.expectOp(',');
        c = { kind: 'type', path, type: this.operand() };
      } else {
        const a = this.operand();
        this.expectOp(',');
        c = { kind: fn as 'begins_with' | 'contains', a, b: this.operand() };
      }
      this.expectOp(')');
      return c;
    }
    const a = this.operand();
    const t = this.peek();
    if (t.t === 'op' && COMPARATORS.has(t.v)) {
      this.i++;
      const b = this.operand();
      const text = (o: Operand) => (o.kind === 'path' ? o.text : o.kind === 'value' ? o.name : undefined);
      if (text(a) !== undefined && text(a) === text(b))
        throw new SyntaxFailure(`The first operand must be distinct from the remaining operands for this operator or function; operator: ${t.v}, first operand: [${text(a)}]`);
      return { kind: 'cmp', op: t.v as Comparator, a, b };
    }
    if (this.isKeyword('BETWEEN')) {
      this.i++;
      const lo = this.operand();
      if (!this.isKeyword('AND')) this.fail();
      this.i++;
      return { kind: 'between', a, lo, hi: this.operand() };
    }
    if (this.isKeyword('IN')) {
      this.i++;
      this.expectOp('(');
      const list = [this.operand()];
      while (this.isOp(',')) {
        this.i++;
        list.push(this.operand());
      }
      this.expectOp(')');
      if (list.length > 100) throw new SyntaxFailure('The IN operator is provided with too many operands; number of operands: ' + list.length);
      return { kind: 'in', a, list };
    }
    return this.fail();
  }

  /** A condition's operand: a path, a value, or size(path). */
  private operand(): Operand {
    const t = this.peek();
    if (t.t === 'value') return this.value();
    const fn = this.functionName();
    if (fn === 'size') {
      this.i += 2;
      const path = this.path();
      this.expectOp(')');
      return { kind: 'size', path };
    }
    if (fn !== undefined) {
      if (UPDATE_FUNCTIONS.has(fn)) throw new SyntaxFailure(`The function is not allowed in a condition expression; function: ${fn}`);
      if (CONDITION_FUNCTIONS.has(fn)) throw new SyntaxFailure(`The function is not allowed to be used this way in an expression; function: ${fn}`);
      throw new SyntaxFailure(`Invalid function name; function: ${fn}`);
    }
    return this.path();
  }

  // ---- updates ----

  update(): UpdateAst {
    const set: { path: Path; value: Operand }[] = [];
    const remove: Path[] = [];
    const add: { path: Path; value: Operand }[] = [];
    const del: { path: Path; value: Operand }[] = [];
    const seen = new Set<string>();
    if (this.atEnd()) this.fail();
    while (!this.atEnd()) {
      const t = this.next();
      const clause = t.t === 'id' ? t.v.toUpperCase() : '';
      if (clause !== 'SET' && clause !== 'REMOVE' && clause !== 'ADD' && clause !== 'DELETE') this.fail(t);
      if (seen.has(clause)) throw new SyntaxFailure(`The "${clause}" section can only be used once in an update expression;`);
      seen.add(clause);
      do {
        if (clause === 'SET') {
          const path = this.path();
          this.expectOp('=');
          set.push({ path, value: this.setValue() });
        } else if (clause === 'REMOVE') remove.push(this.path());
        else (clause === 'ADD' ? add : del).push({ path: this.path(), value: this.value() });
      } while (this.isOp(',') && ++this.i);
    }
    return { set, remove, add, delete: del };
  }

  private setValue(): Operand {
    const a = this.setOperand();
    if (this.isOp('+') || this.isOp('-')) {
      const op = this.next().v as '+' | '-';
      return { kind: 'arith', op, a, b: this.setOperand() };
    }
    return a;
  }

  private setOperand(): Operand {
    if (this.isOp('(')) {
      this.i++;
      const v = this.setValue();
      this.expectOp(')');
      return v;
    }
    if (this.peek().t === 'value') return this.value();
    const fn = this.functionName();
    if (fn === undefined) return this.path();
    if (!UPDATE_FUNCTIONS.has(fn)) {
      if (CONDITION_FUNCTIONS.has(fn) || fn === 'size') throw new SyntaxFailure(`The function is not allowed in an update expression; function: ${fn}`);
      throw new SyntaxFailure(`Invalid function name; function: ${fn}`);
    }
    this.i += 2;
    let v: Operand;
    if (fn === 'if_not_exists') {
      const path = this.path();
      this.expectOp(',');
      v = { kind: 'if_not_exists', path, fallback: this.setValue() };
    } else {
      const a = this.setValue();
      this.expectOp(',');
      v = { kind: 'list_append', a, b: this.setValue() };
    }
    this.expectOp(')');
    return v;
  }

  // ---- projections ----

  projection(): Path[] {
    const paths = [this.path()];
    while (this.isOp(',')) {
      this.i++;
      paths.push(this.path());
    }
    return paths;
  }
}

type Cached<T> = Parsed<T> | SyntaxFailure;

/** Bounded: expressions are templates, but a caller inlining data must not grow memory forever. */
const MAX_CACHED = 10_000;

function cached<T>(cache: Map<string, Cached<T>>, kind: ExpressionKind, src: string, parse: (p: Parser) => T): Parsed<T> {
  let hit = cache.get(src);
  if (hit === undefined) {
    try {
      if (src.trim() === '') throw new SyntaxFailure('The expression can not be empty;');
      const p = new Parser(src);
      const ast = parse(p);
      p.expectEnd();
      hit = { ast, names: [...p.names], values: [...p.values] };
    } catch (e) {
      if (!(e instanceof SyntaxFailure)) throw e;
      hit = e;
    }
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(src, hit);
  }
  if (hit instanceof SyntaxFailure) throw validationError(`Invalid ${kind}: ${hit.message}`);
  return hit;
}

const conditions = new Map<string, Cached<Condition>>();
const updates = new Map<string, Cached<UpdateAst>>();
const projections = new Map<string, Cached<Path[]>>();

/** A condition (also a key condition or filter: `kind` names it in messages), parsed or from the cache; ValidationException when malformed. */
export const parseCondition = (src: string, kind: ExpressionKind = 'ConditionExpression'): Parsed<Condition> => cached(conditions, kind, src, (p) => p.condition());
/** An update expression, parsed or from the cache; ValidationException when malformed. */
export const parseUpdate = (src: string): Parsed<UpdateAst> => cached(updates, 'UpdateExpression', src, (p) => p.update());
/** A projection expression, parsed or from the cache; ValidationException when malformed. */
export const parseProjection = (src: string): Parsed<Path[]> => cached(projections, 'ProjectionExpression', src, (p) => p.projection());
