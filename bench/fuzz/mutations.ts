import fc from "fast-check";

/**
 * Bodies for trying to break the server: a valid message with one part
 * changed (a value swapped for something hostile, a field dropped, a field
 * added) or something that is not the message at all. A valid base keeps the
 * mutation deep: a body that fails on its first field tests only the first
 * field. Shared by the property tests and `npm run fuzz`.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Path = readonly (string | number)[];

/** Values that have broken servers before: wrong types, huge and tiny numbers, long strings, URLs that are not http, NULs. */
export const hostileValue: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(
    null,
    "",
    " ",
    -1,
    0,
    1e308,
    -1e308,
    2 ** 53 + 2,
    0.5,
    true,
    [],
    {},
    "not a url",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "http://evil.example:1/",
    "http://[::1",
    "../../../etc/passwd",
    "a\u0000b",
    "%",
    "x".repeat(5000),
    "2026-13-45T99:99:99Z",
    ["x".repeat(300)],
    { protocol: 2 },
  ),
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
  fc.string({ maxLength: 200 }),
  fc.integer(),
  fc.double({ noNaN: true }),
);

function pathsOf(value: Json, prefix: Path = []): Path[] {
  const here = prefix.length > 0 ? [prefix] : [];
  if (Array.isArray(value)) return [...here, ...value.flatMap((item, index) => pathsOf(item, [...prefix, index]))];
  if (value !== null && typeof value === "object") return [...here, ...Object.entries(value).flatMap(([key, item]) => pathsOf(item, [...prefix, key]))];
  return here;
}

function change(value: Json, path: Path, next: Json | undefined): Json {
  const [head, ...rest] = path;
  if (head === undefined) return next ?? null;
  if (Array.isArray(value) && typeof head === "number") {
    const copy = [...value];
    if (rest.length === 0 && next === undefined) copy.splice(head, 1);
    else copy[head] = change(copy[head] ?? null, rest, next);
    return copy;
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value) && typeof head === "string") {
    const copy = { ...value };
    if (rest.length === 0 && next === undefined) delete copy[head];
    else copy[head] = change(copy[head] ?? null, rest, next);
    return copy;
  }
  return value;
}

/** `valid` unchanged, with one value replaced, one field dropped or added, or replaced whole. */
export function mutationsOf(valid: Json): fc.Arbitrary<Json> {
  const paths = pathsOf(valid);
  const somePath = paths.length > 0 ? fc.constantFrom(...paths) : fc.constant<Path>([]);
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant(valid) },
    { weight: 6, arbitrary: fc.tuple(somePath, hostileValue).map(([path, value]) => change(valid, path, value)) },
    { weight: 2, arbitrary: somePath.map((path) => change(valid, path, undefined)) },
    { weight: 1, arbitrary: fc.tuple(fc.string({ minLength: 1, maxLength: 20 }), hostileValue).map(([key, value]) => (typeof valid === "object" && valid !== null && !Array.isArray(valid) ? { ...valid, [key]: value } : valid)) },
    { weight: 1, arbitrary: hostileValue },
  );
}

export interface AgentMessageBase {
  readonly joinToken: string;
  readonly nodeName: string;
  readonly address: string;
}

export function validInventory(): Json {
  return {
    hostname: "fuzz-host",
    gpus: [
      { index: 0, uuid: "GPU-0", name: "NVIDIA H100 80GB HBM3", class: "h100", memory_bytes: 80 * 1024 ** 3, fabric: "nvl0" },
      { index: 1, uuid: "GPU-1", name: "NVIDIA H100 80GB HBM3", class: "h100", memory_bytes: 80 * 1024 ** 3, fabric: "nvl0" },
    ],
    memory_bytes: 64 * 1024 ** 3,
    cpu_cores: 16,
    engines: ["vllm", "llamacpp"],
    disk_free_bytes: 10 ** 12,
    simulated: true,
  };
}

export function validJoin(base: AgentMessageBase): Json {
  return { protocol: 1, join_token: base.joinToken, name: base.nodeName, address: base.address, fabric: "nvl0", labels: { rack: "1" }, inventory: validInventory() };
}

export function validHeartbeat(base: AgentMessageBase): Json {
  const since = "2026-01-01T00:00:00.000Z";
  return {
    protocol: 1,
    name: base.nodeName,
    address: base.address,
    inventory: validInventory(),
    replicas: [
      { id: "fuzz-ready", model: "fuzz-model", profile: "default", engine: "vllm", cards: [0], state: "ready", endpoint: "http://127.0.0.1:41000", pid: 4242, since },
      { id: "fuzz-fetching", model: "fuzz-model", profile: "default", engine: "vllm", cards: [1], state: "fetching", progress: { fraction: 0.5, bytes_done: 10, bytes_total: 20 }, since },
    ],
  };
}
