import { z } from "zod";
import type { RegisteredRoute } from "./api-route.js";

type JsonSchema = Record<string, unknown>;

/** Input schemas as a client must send them; zod's "input" side keeps defaults optional. */
function inputSchema(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, { target: "draft-2020-12", io: "input", unrepresentable: "any" }) as JsonSchema;
  delete json.$schema;
  return json;
}

function outputSchema(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, { target: "draft-2020-12", io: "output", unrepresentable: "any" }) as JsonSchema;
  delete json.$schema;
  return json;
}

/** `/api/v1/models/:name/adapters/:adapter` → `/api/v1/models/{name}/adapters/{adapter}`. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

function pathParameterNames(url: string): string[] {
  return [...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1] as string);
}

/** An object schema's properties as OpenAPI parameters (query strings and path segments are flat). */
function parametersOf(schema: z.ZodType, where: "query" | "path"): JsonSchema[] {
  const json = inputSchema(schema);
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...rest } = property;
    return { name, in: where, required: where === "path" || required.has(name), schema: rest, ...(typeof description === "string" ? { description } : {}) };
  });
}

const accessText: Record<string, string> = {
  public: "No token.",
  read: "Any admin-API token (read-only or admin).",
  admin: "An admin token.",
  agent: "A node's join token or credential (the agent protocol), checked by the route itself.",
};

export interface OpenApiInfo {
  readonly version: string;
  readonly apiRange: { readonly min: number; readonly max: number };
}

/**
 * The admin API as an OpenAPI 3.1 document, from the routes the app
 * registered and the zod schemas each declares beside itself. Pure: the same
 * routes give the same document, byte for byte once serialised.
 */
export function buildOpenApi(routes: readonly RegisteredRoute[], info: OpenApiInfo): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const documented = routes.filter((route) => route.url.startsWith("/api/v1/") && route.api !== undefined);
  const sorted = [...documented].sort((a, b) => a.url.localeCompare(b.url) || a.method.localeCompare(b.method));
  for (const route of sorted) {
    const api = route.api as NonNullable<RegisteredRoute["api"]>;
    const parameters: JsonSchema[] = api.params
      ? parametersOf(api.params, "path")
      : pathParameterNames(route.url).map((name) => ({ name, in: "path", required: true, schema: { type: "string" } }));
    if (api.query) parameters.push(...parametersOf(api.query, "query"));
    const status = String(api.status ?? 200);
    const produces = api.produces ?? "application/json";
    const success: JsonSchema = api.response
      ? { description: api.summary, content: { [produces]: { schema: outputSchema(api.response) } } }
      : { description: `${api.summary} (the answer's fields are in docs/admin-api.md)`, content: { [produces]: {} } };
    const operation: JsonSchema = {
      summary: api.summary,
      description: accessText[route.access] ?? route.access,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(api.body ? { requestBody: { required: true, content: { "application/json": { schema: inputSchema(api.body) } } } } : {}),
      responses: { [status]: success, default: { $ref: "#/components/responses/Error" } },
      ...(route.access === "public" || route.access === "agent" ? { security: [] } : {}),
    };
    const at = (paths[openApiPath(route.url)] ??= {});
    at[route.method.toLowerCase()] = operation;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "llmgw admin API",
      version: info.version,
      description: [
        `The admin API of llmgw ${info.version} (admin API versions ${info.apiRange.min} to ${info.apiRange.max}; a client may send \`llmgw-api: MIN-MAX\`).`,
        "Request bodies, query strings and path parameters are the zod schemas the routes validate with, converted by zod's JSON Schema output.",
        "Most answers are views declared as TypeScript types, not zod schemas: their fields are documented in docs/admin-api.md and docs/ctl.md (JSON output), and this document leaves their schema open.",
        "Every error is `{error: {code, message, hint, details?}}` with a code from docs/ERRORS.md.",
      ].join(" "),
    },
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "An admin-API token (`llmgw ctl token create`)." } },
      responses: {
        Error: {
          description: "An error, in the one shape every route answers with",
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["error"],
                properties: {
                  error: {
                    type: "object",
                    required: ["code", "message"],
                    properties: {
                      code: { type: "string", description: "A stable code from docs/ERRORS.md" },
                      message: { type: "string" },
                      hint: { type: ["string", "null"] },
                      details: { type: "array", items: { type: "object", properties: { where: { type: "string" }, message: { type: "string" } } } },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
    security: [{ bearer: [] }],
    paths,
  };
}

/** The document as written to docs/reference/openapi.json: stable key order, two-space indent, a final newline. */
export function serialiseOpenApi(document: JsonSchema): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
