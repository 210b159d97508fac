/**
 * Holds the server's answers to its own OpenAPI document: the end-to-end tests' client (server.ts)
 * checks every answer it gets, so the document cannot drift from what the server does. An answer
 * whose status the operation does not declare, whose content type it does not declare, or whose
 * JSON or text body its schema refuses, fails the test that got it.
 */
import { Ajv, type ValidateFunction } from 'ajv';

interface MediaType {
  schema?: Record<string, unknown>;
}
interface Operation {
  responses: Record<string, { content?: Record<string, MediaType> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Record<string, unknown>> };
}

interface CompiledOperation {
  statuses: Map<string, Map<string, ValidateFunction | null>>;
}
export interface Checker {
  routes: { re: RegExp; method: string; op: CompiledOperation }[];
}

/** One per route table: building the document and compiling its schemas takes a few hundred ms. */
const checkers = new Map<string, Checker>();

/**
 * The checker of an app's answers, made now (a test server's start calls this, so the work is not
 * done on the server's thread in the middle of a test, where it would stretch a rate window).
 */
export function answerChecker(app: { routeList: unknown; swagger(): unknown }): Checker {
  const key = JSON.stringify(app.routeList);
  let checker = checkers.get(key);
  if (!checker) checkers.set(key, (checker = checkerFor(app.swagger() as Doc)));
  return checker;
}

/** OpenAPI 3.0 schemas as JSON Schema: `nullable` is Ajv's own keyword; `example` is only a note. */
function checkerFor(doc: Doc): Checker {
  const ajv = new Ajv({ strict: false, allErrors: false, validateFormats: false });
  const definitions = rewriteRefs(doc.components?.schemas ?? {}) as Record<string, unknown>;
  const routes: Checker['routes'] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    const re = new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
    for (const [method, op] of Object.entries(ops)) {
      const statuses = new Map<string, Map<string, ValidateFunction | null>>();
      for (const [status, r] of Object.entries(op.responses ?? {})) {
        const types = new Map<string, ValidateFunction | null>();
        for (const [type, media] of Object.entries(r.content ?? {})) {
          types.set(type, media.schema ? ajv.compile({ ...(rewriteRefs(media.schema) as object), definitions }) : null);
        }
        statuses.set(status, types);
      }
      routes.push({ re, method: method.toUpperCase(), op: { statuses } });
    }
  }
  return { routes };
}

/** `#/components/schemas/X` becomes `#/definitions/X`, which each compiled schema carries. */
function rewriteRefs(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rewriteRefs);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === '$id') continue;
    out[k] = k === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', '#/definitions/') : rewriteRefs(v);
  }
  return out;
}

/**
 * What is wrong with `res` as the answer to `method pathAndQuery`, or null. Paths the
 * document does not hold (hidden routes, unknown URLs) are not checked.
 */
export async function checkAnswer(checker: Checker, method: string, pathAndQuery: string, res: Response): Promise<string | null> {
  const path = pathAndQuery.split('?')[0]!;
  const route = checker.routes.find((r) => r.method === method && r.re.test(path));
  if (!route) return null;
  const where = `${method} ${path} → ${res.status}`;
  const declared = route.op.statuses.get(String(res.status)) ?? route.op.statuses.get(`${String(res.status)[0]}XX`);
  if (!declared) return `${where}: status not in the OpenAPI document`;
  if (res.status === 204 || res.status === 304) return null;
  const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (!declared.has(type)) return `${where}: content type ${type || '(none)'} not in the document (${[...declared.keys()].join(', ')})`;
  const validate = declared.get(type);
  if (!validate || (type !== 'application/json' && type !== 'text/plain')) return null;
  const text = await res.clone().text();
  let value: unknown = text;
  if (type === 'application/json') {
    try {
      value = JSON.parse(text);
    } catch {
      return `${where}: the body is not JSON`;
    }
  }
  if (validate(value)) return null;
  return `${where}: ${validate.errors!.map((e) => `${e.instancePath || '(body)'} ${e.message}`).join('; ')} in ${text.slice(0, 300)}`;
}
