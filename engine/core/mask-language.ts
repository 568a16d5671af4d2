// The mask language: FlexAttention-style `mask_mod(b, h, q_idx, kv_idx)` and
// `score_mod(score, b, h, q_idx, kv_idx)` bodies as one expression. jsep parses the text;
// only the node types, names, functions and operators whitelisted here become a MaskNode,
// so the evaluator, the block mask and the WGSL generator never see anything else.

import jsep from 'jsep';

/** int: whole numbers (indices, counts); num: real numbers; bool: a mask decision. */
export type MaskType = 'int' | 'num' | 'bool';

/** Which of the two callables a text is: a mask yields true/false, a score mod a number. */
export type MaskKind = 'mask_mod' | 'score_mod';

export type MaskVar = 'b' | 'h' | 'q_idx' | 'kv_idx' | 'nq' | 'nk' | 'score';

export type UnaryOp = '-' | '!';
export type BinaryOp = '+' | '-' | '*' | '/' | '%' | '<' | '<=' | '>' | '>=' | '==' | '!=' | '&&' | '||';

export type MaskFn = 'min' | 'max' | 'abs' | 'floor' | 'ceil' | 'sqrt' | 'tanh' | 'exp' | 'log' | 'where' | 'clamp';

/** `at` is the 1-based column the node starts at, for messages. */
export type MaskNode =
  | { k: 'lit'; t: MaskType; v: number | boolean; at: number }
  | { k: 'var'; t: MaskType; name: MaskVar; at: number }
  | { k: 'aux'; t: MaskType; name: string; index: MaskNode; at: number }
  | { k: 'call'; t: MaskType; fn: MaskFn; args: MaskNode[]; at: number }
  | { k: 'unary'; t: MaskType; op: UnaryOp; arg: MaskNode; at: number }
  | { k: 'bin'; t: MaskType; op: BinaryOp; l: MaskNode; r: MaskNode; at: number }
  | { k: 'cond'; t: MaskType; test: MaskNode; yes: MaskNode; no: MaskNode; at: number };

/** A parse or check failure: `column` is 1-based and the message starts with it. */
export class MaskError extends Error {
  constructor(
    readonly column: number,
    readonly reason: string,
  ) {
    super(`column ${column}: ${reason}`);
    this.name = 'MaskError';
  }
}

/** Longest accepted text and deepest accepted expression: masks are one-liners. */
export const MAX_MASK_CHARS = 1000;
export const MAX_MASK_DEPTH = 40;

const VAR_TYPES: ReadonlyMap<string, MaskType> = new Map<string, MaskType>([
  ['b', 'int'],
  ['h', 'int'],
  ['q_idx', 'int'],
  ['kv_idx', 'int'],
  ['nq', 'int'],
  ['nk', 'int'],
  ['score', 'num'],
]);

const ARITY: ReadonlyMap<string, number> = new Map<string, number>([
  ['min', 2],
  ['max', 2],
  ['abs', 1],
  ['floor', 1],
  ['ceil', 1],
  ['sqrt', 1],
  ['tanh', 1],
  ['exp', 1],
  ['log', 1],
  ['where', 3],
  ['clamp', 3],
]);

/** Names the language reserves; aux arrays cannot take them. */
export const RESERVED_NAMES: readonly string[] = [...VAR_TYPES.keys(), ...ARITY.keys(), 'true', 'false'];

const AUX_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,31}$/;

/** An aux array's name is usable when it is a plain identifier the language does not reserve. */
export function auxNameProblem(name: string): string | undefined {
  if (!AUX_NAME.test(name)) return `aux array name '${name.slice(0, 40)}' must be letters, digits and _ (at most 32)`;
  if (RESERVED_NAMES.includes(name)) return `aux array name '${name}' is reserved by the mask language`;
  return undefined;
}

const BINARY: ReadonlySet<string> = new Set(['+', '-', '*', '/', '%', '<', '<=', '>', '>=', '==', '!=', '&&', '||']);
/** JavaScript spellings accepted as their plain counterparts (torch masks use & and | on booleans). */
const BINARY_ALIAS: ReadonlyMap<string, BinaryOp> = new Map<string, BinaryOp>([
  ['===', '=='],
  ['!==', '!='],
  ['&', '&&'],
  ['|', '||'],
]);

// jsep is configured once: operators the language lacks are removed so jsep itself rejects them
// at their column, and every token records where it starts.
for (const op of ['??', '^', '<<', '>>', '>>>', '**']) jsep.removeBinaryOp(op);
jsep.removeUnaryOp('~');
jsep.removeLiteral('null');
const starts: number[] = [];
jsep.hooks.add('gobble-token', function (this: jsep.HookScope) {
  // Numeric literals return without the after-token hook, so they get no entry.
  const c = this.code;
  if (!((c >= 48 && c <= 57) || c === 46)) starts.push(this.index);
});
jsep.hooks.add('after-token', function (this: jsep.HookScope, env: { node?: jsep.Expression }) {
  const at = starts.pop();
  if (env.node && typeof env.node === 'object' && env.node.start === undefined && at !== undefined) env.node.start = at;
});

function describeType(t: MaskType): string {
  return t === 'bool' ? 'true/false' : t === 'int' ? 'a whole number' : 'a number';
}

interface Scope {
  kind: MaskKind;
  aux: ReadonlyMap<string, MaskType>;
  text: string;
}

/** Best 1-based column of a jsep node: its recorded start, else its first child's. */
function columnOf(e: jsep.Expression | undefined, scope: Scope): number {
  if (!e) return 1;
  if (typeof e.start === 'number') return e.start + 1;
  for (const key of ['left', 'test', 'argument', 'callee', 'object', 'body']) {
    const child = e[key];
    if (Array.isArray(child)) return columnOf(child[0] as jsep.Expression, scope);
    if (child && typeof child === 'object' && 'type' in child) return columnOf(child as jsep.Expression, scope);
  }
  if (e.type === 'Literal' && typeof e.raw === 'string') {
    const i = scope.text.indexOf(e.raw);
    if (i >= 0) return i + 1;
  }
  return 1;
}

function need(node: MaskNode, want: 'number' | 'bool', what: string): void {
  const ok = want === 'bool' ? node.t === 'bool' : node.t !== 'bool';
  if (!ok) throw new MaskError(node.at, `${what} needs ${want === 'bool' ? 'true/false' : 'a number'}, got ${describeType(node.t)}`);
}

function numericType(a: MaskNode, b: MaskNode): MaskType {
  return a.t === 'int' && b.t === 'int' ? 'int' : 'num';
}

function check(e: jsep.Expression, scope: Scope, depth: number): MaskNode {
  const at = columnOf(e, scope);
  if (depth > MAX_MASK_DEPTH) throw new MaskError(at, `expression nested deeper than ${MAX_MASK_DEPTH} levels`);
  switch (e.type) {
    case 'Literal': {
      const v = e.value;
      if (typeof v === 'boolean') return { k: 'lit', t: 'bool', v, at };
      if (typeof v === 'number') {
        if (!Number.isFinite(v)) throw new MaskError(at, `number ${String(e.raw).slice(0, 20)} is too large`);
        return { k: 'lit', t: Number.isInteger(v) && Math.abs(v) <= 2 ** 31 - 1 ? 'int' : 'num', v, at };
      }
      throw new MaskError(at, 'text in quotes is not part of the mask language; use numbers, names and operators');
    }
    case 'Identifier': {
      const name = String(e.name);
      const vt = VAR_TYPES.get(name);
      if (vt !== undefined) {
        if (name === 'score' && scope.kind === 'mask_mod') {
          throw new MaskError(at, "'score' exists only in score_mod; mask_mod decides from b, h, q_idx, kv_idx");
        }
        return { k: 'var', t: vt, name: name as MaskVar, at };
      }
      if (scope.aux.has(name)) throw new MaskError(at, `'${name}' is an array: read one entry, e.g. ${name}[q_idx]`);
      if (ARITY.has(name)) throw new MaskError(at, `'${name}' is a function: call it, e.g. ${name}(…)`);
      throw new MaskError(
        at,
        `unknown name '${name.slice(0, 40)}'; known: b, h, q_idx, kv_idx, nq, nk${scope.kind === 'score_mod' ? ', score' : ''}${scope.aux.size ? `, ${[...scope.aux.keys()].join(', ')}` : ''}`,
      );
    }
    case 'MemberExpression': {
      const obj = e.object as jsep.Expression;
      if (!e.computed || obj.type !== 'Identifier') {
        throw new MaskError(at, 'only aux arrays can be indexed, as name[index]; properties (a.b) are not part of the language');
      }
      const name = String(obj.name);
      const t = scope.aux.get(name);
      if (t === undefined)
        throw new MaskError(
          at,
          `unknown array '${name.slice(0, 40)}'${scope.aux.size ? `; arrays: ${[...scope.aux.keys()].join(', ')}` : '; this mask has no aux arrays'}`,
        );
      const index = check(e.property as jsep.Expression, scope, depth + 1);
      if (index.t !== 'int')
        throw new MaskError(index.at, `index of ${name}[…] must be a whole number, got ${describeType(index.t)}; use floor(…)`);
      return { k: 'aux', t, name, index, at };
    }
    case 'CallExpression': {
      const callee = e.callee as jsep.Expression;
      if (callee.type !== 'Identifier') throw new MaskError(at, 'only the built-in functions can be called, by name');
      const fn = String(callee.name);
      const arity = ARITY.get(fn);
      if (arity === undefined) throw new MaskError(at, `unknown function '${fn.slice(0, 40)}'; functions: ${[...ARITY.keys()].join(', ')}`);
      const rawArgs = e.arguments as jsep.Expression[];
      if (rawArgs.length !== arity) throw new MaskError(at, `${fn} takes ${arity} argument${arity > 1 ? 's' : ''}, got ${rawArgs.length}`);
      const args = rawArgs.map((a) => {
        if (a === null) throw new MaskError(at, `${fn}(…) has an empty argument`);
        return check(a, scope, depth + 1);
      });
      return callNode(fn as MaskFn, args, at);
    }
    case 'UnaryExpression': {
      const arg = check(e.argument as jsep.Expression, scope, depth + 1);
      const op = String(e.operator);
      if (op === '+') {
        need(arg, 'number', "unary '+'");
        return arg;
      }
      if (op === '-') {
        need(arg, 'number', "unary '-'");
        return { k: 'unary', t: arg.t, op: '-', arg, at };
      }
      if (op === '!') {
        need(arg, 'bool', "'!'");
        return { k: 'unary', t: 'bool', op: '!', arg, at };
      }
      throw new MaskError(at, `operator '${op}' is not part of the mask language`);
    }
    case 'BinaryExpression': {
      const raw = String(e.operator);
      const op = BINARY_ALIAS.get(raw) ?? raw;
      if (!BINARY.has(op)) throw new MaskError(at, `operator '${raw}' is not part of the mask language`);
      const l = check(e.left as jsep.Expression, scope, depth + 1);
      const r = check(e.right as jsep.Expression, scope, depth + 1);
      return binaryNode(op as BinaryOp, raw, l, r, at);
    }
    case 'ConditionalExpression': {
      const test = check(e.test as jsep.Expression, scope, depth + 1);
      const a = check(e.consequent as jsep.Expression, scope, depth + 1);
      const b = check(e.alternate as jsep.Expression, scope, depth + 1);
      const t = whereType(test, a, b, '… ? … : …');
      return { k: 'cond', t, test, yes: a, no: b, at };
    }
    case 'Compound': {
      const body = e.body as jsep.Expression[];
      throw new MaskError(
        body.length > 1 ? columnOf(body[1], scope) : at,
        'a mask is one expression; remove the comma, semicolon or the second expression',
      );
    }
    case 'ArrayExpression':
      throw new MaskError(at, 'array literals are not part of the mask language; pass arrays as aux arrays');
    case 'ThisExpression':
      throw new MaskError(at, "'this' is not part of the mask language");
    default:
      throw new MaskError(at, `${String(e.type).slice(0, 40)} is not part of the mask language`);
  }
}

function whereType(test: MaskNode, a: MaskNode, b: MaskNode, what: string): MaskType {
  need(test, 'bool', `the condition of ${what}`);
  if ((a.t === 'bool') !== (b.t === 'bool')) {
    throw new MaskError(
      b.at,
      `both branches of ${what} must be true/false or both numbers; got ${describeType(a.t)} and ${describeType(b.t)}`,
    );
  }
  return a.t === 'bool' ? 'bool' : numericType(a, b);
}

function callNode(fn: MaskFn, args: MaskNode[], at: number): MaskNode {
  if (fn === 'where') return { k: 'call', t: whereType(args[0], args[1], args[2], 'where(…)'), fn, args, at };
  for (const a of args) need(a, 'number', `${fn}(…)`);
  let t: MaskType = 'num';
  if (fn === 'min' || fn === 'max' || fn === 'abs' || fn === 'clamp') t = args.every((a) => a.t === 'int') ? 'int' : 'num';
  else if (fn === 'floor' || fn === 'ceil') t = 'int';
  return { k: 'call', t, fn, args, at };
}

function binaryNode(op: BinaryOp, raw: string, l: MaskNode, r: MaskNode, at: number): MaskNode {
  if (op === '&&' || op === '||') {
    need(l, 'bool', `'${raw}'`);
    need(r, 'bool', `'${raw}'`);
    return { k: 'bin', t: 'bool', op, l, r, at };
  }
  if (op === '==' || op === '!=') {
    if ((l.t === 'bool') !== (r.t === 'bool'))
      throw new MaskError(r.at, `'${raw}' compares two numbers or two true/false values, not one of each`);
    return { k: 'bin', t: 'bool', op, l, r, at };
  }
  need(l, 'number', `'${raw}'`);
  need(r, 'number', `'${raw}'`);
  if (op === '<' || op === '<=' || op === '>' || op === '>=') return { k: 'bin', t: 'bool', op, l, r, at };
  return { k: 'bin', t: op === '/' ? 'num' : numericType(l, r), op, l, r, at };
}

/** Why a text is refused before jsep sees it: length and bracket depth (jsep recurses on brackets). */
function precheck(text: string): void {
  if (text.length > MAX_MASK_CHARS)
    throw new MaskError(MAX_MASK_CHARS + 1, `a mask is at most ${MAX_MASK_CHARS} characters, got ${text.length}`);
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(' || c === '[') depth++;
    else if (c === ')' || c === ']') depth--;
    if (depth > MAX_MASK_DEPTH) throw new MaskError(i + 1, `brackets nested deeper than ${MAX_MASK_DEPTH} levels`);
    const code = text.charCodeAt(i);
    if (code < 32 && c !== '\t' && c !== '\n' && c !== '\r')
      throw new MaskError(i + 1, `control character U+${code.toString(16).padStart(4, '0')} in the mask`);
  }
  if (text.trim() === '') throw new MaskError(1, 'the mask is empty');
}

/** Turns jsep's "… at character N" into a column message. */
function syntaxError(err: unknown, text: string): MaskError {
  const e = err as { message?: unknown; index?: unknown };
  const index = typeof e.index === 'number' ? e.index : 0;
  const raw = typeof e.message === 'string' ? e.message.replace(/ at character \d+$/, '') : 'cannot read the expression';
  const near = text.slice(index, index + 12);
  return new MaskError(Math.min(index, text.length) + 1, `${raw}${near ? ` (near '${near}')` : ''}`);
}

/**
 * Parses and checks one mask_mod or score_mod body. `aux` maps each aux array's name to the
 * type of its entries. Throws MaskError with the column of the first problem.
 */
export function parseMask(text: string, kind: MaskKind, aux: ReadonlyMap<string, MaskType> = new Map()): MaskNode {
  if (typeof text !== 'string') throw new MaskError(1, `${kind} must be text`);
  precheck(text);
  let tree: jsep.Expression;
  starts.length = 0;
  try {
    tree = jsep(text);
  } catch (err) {
    if (err instanceof RangeError) throw new MaskError(1, 'the expression is too deeply nested');
    throw syntaxError(err, text);
  }
  const node = check(tree, { kind, aux, text }, 0);
  if (kind === 'mask_mod' && node.t !== 'bool') {
    throw new MaskError(node.at, `mask_mod must be true (keep) or false (mask), e.g. q_idx >= kv_idx; this is ${describeType(node.t)}`);
  }
  if (kind === 'score_mod' && node.t === 'bool') {
    throw new MaskError(node.at, 'score_mod must be a number (the new score), e.g. score - abs(q_idx - kv_idx); this is true/false');
  }
  return node;
}

/** Names the expression reads (variables and aux arrays), for what the block mask can broadcast. */
export function namesRead(node: MaskNode, out: Set<string> = new Set()): Set<string> {
  switch (node.k) {
    case 'lit':
      break;
    case 'var':
      out.add(node.name);
      break;
    case 'aux':
      out.add(node.name);
      namesRead(node.index, out);
      break;
    case 'call':
      for (const a of node.args) namesRead(a, out);
      break;
    case 'unary':
      namesRead(node.arg, out);
      break;
    case 'bin':
      namesRead(node.l, out);
      namesRead(node.r, out);
      break;
    case 'cond':
      namesRead(node.test, out);
      namesRead(node.yes, out);
      namesRead(node.no, out);
      break;
  }
  return out;
}
