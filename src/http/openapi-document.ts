/**
 * The OpenAPI document as the server reads requests, where fastify-swagger's defaults say otherwise:
 * - a request body is never required unless it carries a required file: every parameter may come in
 *   the query string instead (CONTRACT section 2), and an operation answers without a body;
 * - a list parameter is one comma-separated value (`?recent_txn_id=a,b`), not a repeated name.
 */
export interface OpenApiDocument {
  paths?: Record<string, Record<string, OpenApiOperation>>;
}
interface OpenApiOperation {
  parameters?: { in: string; schema?: { type?: string }; style?: string; explode?: boolean }[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: { required?: string[]; properties?: Record<string, { format?: string }> } }> };
}

export function documentAsServed<D extends OpenApiDocument>(doc: D): D {
  for (const ops of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(ops)) {
      for (const p of op.parameters ?? []) {
        if (p.in === 'query' && p.schema?.type === 'array') Object.assign(p, { style: 'form', explode: false });
      }
      if (op.requestBody) {
        op.requestBody.required = Object.values(op.requestBody.content ?? {}).some(({ schema }) =>
          (schema?.required ?? []).some((name) => schema?.properties?.[name]?.format === 'binary'),
        );
      }
    }
  }
  return doc;
}
