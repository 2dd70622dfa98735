import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultServerLimits } from "../../../src/catalog/server-limits.js";
import { closingExchange, RawClient } from "../../../src/gateway/testing/raw-client.js";
import { startEchoFront } from "../../../src/gateway/testing/echo-front.js";
import { FailureCounter, reportChaos } from "../chaos-report.js";

/**
 * The gateway's front (src/gateway/front/) reads HTTP/1.1 itself for the
 * OpenAI POST routes and hands every other connection to node's parser. A
 * reader of its own beside node's is where request smuggling lives: two
 * readers that frame the same bytes differently. So each generated request
 * (a valid chat completion, then mutated at the byte and token level) is sent
 * to the gateway and to a plain node:http server that answers 200 to whatever
 * it parsed, and:
 *
 * 1. what node's parser refuses (a 4xx, or a connection closed unanswered),
 *    the gateway refuses too, and its engine is not asked;
 * 2. every body the engine is asked with is one node parsed, and the engine is
 *    asked, and the gateway answers 2xx, at most as often as node parsed
 *    requests (pipelined pairs too);
 * 3. valid chat completions that node parsed (POST /v1/chat/completions, the
 *    body sent whole) are each answered 2xx by the gateway too.
 *
 * Deliberate differences, allowed here because they only refuse:
 * - absolute-form targets (`POST http://gw/v1/chat/completions`): node parses
 *   them and the gateway answers 404, as its routes are paths; they are sent
 *   only to proxies, and no OpenAI client sends one to its base URL. They fall
 *   outside rule 3 because node's `url` is then not the path.
 * - a valid request followed on its connection by bytes node refuses (a
 *   second request, or a body longer than declared): node's server answers
 *   the connection 400 and closes it as soon as its parser reads them, and
 *   that is before the first's answer whenever the answer waits on anything
 *   (the reference answers at once; the gateway waits on its engine, and does
 *   so behind node's parser for a connection the front handed over). Rule 3
 *   holds only where node refused nothing on the connection; rules 1 and 2
 *   hold everywhere.
 *
 * Each case is written on a fresh connection to each; the client's side is
 * closed at once for node and for a gateway that should refuse, after the
 * answers node gave for one that should answer, so no case waits on a
 * timeout but one the gateway frames differently from node.
 */

const runs = Number(process.env.LLMGW_FRONT_FUZZ_RUNS ?? 500);
const seed = process.env.LLMGW_FRONT_FUZZ_SEED === undefined ? 20261203 : Number(process.env.LLMGW_FRONT_FUZZ_SEED);

const body = JSON.stringify({ model: "echo", messages: [{ role: "user", content: "fuzz" }] });
const path = "/v1/chat/completions";

interface Parsed {
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly body: string;
}

let front: Awaited<ReturnType<typeof startEchoFront>>;
let plain: Server;
let gatewayPort: number;
let plainPort: number;
let engineSaw: string[];
const nodeParsed: Parsed[] = [];

beforeAll(async () => {
  // Short timeouts: a case the gateway neither answers nor closes costs a second, not the default minute.
  front = await startEchoFront({ ...defaultServerLimits, headerTimeoutMs: 1000, requestTimeoutMs: 1500 });
  gatewayPort = front.port;
  engineSaw = front.engineSaw;
  // The reference: node's own parser, with the same head limit as the gateway's port, answering 200 to every request it parsed whole.
  plain = createServer({ maxHeaderSize: defaultServerLimits.headerBytes }, (request, response) => {
    const parts: Buffer[] = [];
    request.on("data", (part: Buffer) => parts.push(part));
    request.on("end", () => {
      nodeParsed.push({ method: request.method, url: request.url, body: Buffer.concat(parts).toString("latin1") });
      response.end("parsed");
    });
  });
  await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
  plainPort = (plain.address() as AddressInfo).port;
});

afterAll(async () => {
  await front?.close();
  if (plain === undefined) return;
  plain.closeAllConnections();
  await new Promise<void>((resolve) => plain.close(() => resolve()));
});

/**
 * Writes the bytes on a fresh connection and reads until `answers` whole
 * answers have come (then closes its write side) or the server closes, and
 * then until the server closes; `waitMs` bounds each wait. For the gateway,
 * whose answers wait on an engine: a request node parsed gets its answer
 * before the client's side closes, so the gateway is not asked to answer a
 * client that has gone (which node's half of it, like node, would not).
 */
async function answeredExchange(port: number, bytes: Buffer, answers: number, waitMs = 2500): Promise<string> {
  const closers: (() => Promise<void>)[] = [];
  const client = new RawClient(port, closers);
  let text = "";
  client.socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
  const timeout = (): Promise<"timeout"> => new Promise((resolve) => setTimeout(() => resolve("timeout"), waitMs).unref());
  client.send(bytes);
  for (let answer = 0; answer < answers; answer += 1) {
    const next = await Promise.race([client.next(), client.closed.then(() => "closed" as const), timeout()]);
    if (next === "closed" || next === "timeout") break;
  }
  client.socket.end();
  await Promise.race([client.closed, timeout()]);
  for (const close of closers) await close();
  return text;
}

/**
 * The status of every final answer on a connection, in order (node's plain
 * answers end in "parsed" with no line break before the next); an interim
 * 100 Continue, which both send for Expect: 100-continue, is not an answer.
 */
const statusesOf = (answer: string): number[] => [...answer.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((match) => Number(match[1])).filter((status) => status >= 200);

/*
 * The generator: the parts of a request as latin1 text (so the counterexample
 * fast-check prints reads as the bytes sent), each part valid or one of the
 * variants smuggling and fuzzing tools try.
 */

/** Mostly the valid choice, sometimes one of the others. */
const mostly = <T>(valid: T, others: readonly T[], weight = 3): fc.Arbitrary<T> => fc.oneof({ arbitrary: fc.constant(valid), weight }, { arbitrary: fc.constantFrom(...others), weight: 1 });

const requestLine = mostly(`POST ${path} HTTP/1.1`, [
  `POST ${path} HTTP/1.0`,
  `POST ${path}`,
  `POST  ${path} HTTP/1.1`,
  `POST ${path}  HTTP/1.1`,
  `POST ${path} HTTP/1.1 `,
  ` POST ${path} HTTP/1.1`,
  `POST\t${path} HTTP/1.1`,
  `POST http://gw${path} HTTP/1.1`,
  `post ${path} HTTP/1.1`,
  `Post ${path} HTTP/1.1`,
  `POST ${path} http/1.1`,
  `POST ${path} HTTP/1.10`,
  `POST ${path} HTTP/2.0`,
  `POST ${path} HTTP/1`,
  `POST ${path}?stream=false HTTP/1.1`,
  `POST ${path}/ HTTP/1.1`,
  `POST ${path}#x HTTP/1.1`,
  `POST /v1/chat/completions\u0000 HTTP/1.1`,
  `POST /v1/chat/completions\u00e9 HTTP/1.1`,
  `\r\nPOST ${path} HTTP/1.1`,
  `GET ${path} HTTP/1.1`,
], 5);

type Header = readonly [name: string, value: string];

/** How the body is framed: the headers that say so, and how the body is written. */
interface Framing {
  readonly headers: readonly Header[];
  readonly chunked: boolean;
}

const length = String(Buffer.byteLength(body));
const contentLength = mostly<string>(length, [
  `+${length}`,
  "-1",
  `0${length}`,
  `${length}, ${length}`,
  `${length},${Number(length) + 1}`,
  `${length.slice(0, 1)} ${length.slice(1)}`,
  `${length}.0`,
  `0x${Number(length).toString(16)}`,
  "",
  " ",
  String(Number(length) - 1),
  String(Number(length) + 1),
  "0",
  "99999999999999999999",
  `${length}\u0000`,
  `${length}a`,
  `${length}\t`,
  `\t${length}`,
  `${length} `,
  `${length}\u000b`,
]);

const transferEncoding = fc.constantFrom(
  "chunked",
  "Chunked",
  "CHUNKED",
  " chunked",
  "chunked ",
  "chunked\t",
  "chunked, gzip",
  "gzip, chunked",
  "gzip,chunked",
  "chunked, chunked",
  "identity, chunked",
  "chunked,",
  ",chunked",
  "chunked;q=1",
  "xchunked",
  "chunk",
  "identity",
  "",
);

const framing: fc.Arbitrary<Framing> = fc.oneof(
  { arbitrary: contentLength.map((value) => ({ headers: [["Content-Length", value]] as const, chunked: false })), weight: 6 },
  { arbitrary: fc.tuple(contentLength, contentLength).map(([first, second]) => ({ headers: [["Content-Length", first], ["Content-Length", second]] as const, chunked: false })), weight: 1 },
  { arbitrary: fc.tuple(transferEncoding, fc.constantFrom("Transfer-Encoding", "transfer-encoding", "TRANSFER-ENCODING", "Transfer-encoding")).map(([value, name]) => ({ headers: [[name, value]] as const, chunked: true })), weight: 2 },
  { arbitrary: fc.tuple(transferEncoding, contentLength, fc.boolean()).map(([value, bytes, first]) => ({ headers: first ? ([["Content-Length", bytes], ["Transfer-Encoding", value]] as const) : ([["Transfer-Encoding", value], ["Content-Length", bytes]] as const), chunked: true })), weight: 2 },
  { arbitrary: fc.constant({ headers: [], chunked: false }), weight: 1 },
);

/** A body in chunks, right or broken in one of the ways chunk parsers differ on. */
const chunkedBody = fc
  .tuple(
    fc.integer({ min: 1, max: body.length - 1 }),
    mostly<string>("right", ["uppercase hex", "leading zeros", "extension", "quoted extension", "extension with a space", "extension with a control", "0x size", "negative size", "huge size", "size with a space", "no CRLF after data", "LF after size", "no last chunk", "trailer", "no final CRLF", "size too small", "size too large"]),
  )
  .map(([split, how]) => {
    const chunks = [body.slice(0, split), body.slice(split)];
    const size = (chunk: string): string => {
      const hex = chunk.length.toString(16);
      switch (how) {
        case "uppercase hex": return hex.toUpperCase();
        case "leading zeros": return `000${hex}`;
        case "extension": return `${hex};name=value`;
        case "quoted extension": return `${hex};name="a b"`;
        case "extension with a space": return `${hex} ;name`;
        case "extension with a control": return `${hex};na\u0001me`;
        case "0x size": return `0x${hex}`;
        case "negative size": return `-${hex}`;
        case "huge size": return "fffffffffffffffff";
        case "size with a space": return `${hex} `;
        case "size too small": return (chunk.length - 1).toString(16);
        case "size too large": return (chunk.length + 1).toString(16);
        default: return hex;
      }
    };
    const afterSize = how === "LF after size" ? "\n" : "\r\n";
    const afterData = how === "no CRLF after data" ? "" : "\r\n";
    const written = chunks.map((chunk) => `${size(chunk)}${afterSize}${chunk}${afterData}`).join("");
    if (how === "no last chunk") return written;
    if (how === "trailer") return `${written}0\r\nx-trailer: 1\r\n\r\n`;
    if (how === "no final CRLF") return `${written}0\r\n`;
    return `${written}0\r\n\r\n`;
  });

/** One change to the header lines, at the header `at` picks (modulo their number). */
type HeaderChange = (headers: Header[], at: number) => void;

const pick = (headers: Header[], at: number): number => at % Math.max(1, headers.length);
const rename = (headers: Header[], at: number, to: (name: string) => string): void => {
  const index = pick(headers, at);
  const header = headers[index];
  if (header !== undefined) headers[index] = [to(header[0]), header[1]];
};
const revalue = (headers: Header[], at: number, to: (value: string) => string): void => {
  const index = pick(headers, at);
  const header = headers[index];
  if (header !== undefined) headers[index] = [header[0], to(header[1])];
};
const insertAt = (text: string, at: number, bit: string): string => {
  const where = at % (text.length + 1);
  return text.slice(0, where) + bit + text.slice(where);
};

const oddChar = fc.constantFrom(" ", "\t", "(", ")", "<", "@", ",", ";", '"', "/", "[", "]", "?", "=", "{", "}", "\u007f", "\u0080", "\u00e9", "\u0000", "\u0001", "\r", "\n", ":");
const valueChar = fc.constantFrom("\u0080", "\u00ff", "\u007f", "\u0000", "\u0001", "\r", "\n", "\t", "\u000b", "\u000c", " ");

const headerChange: fc.Arbitrary<HeaderChange> = fc.oneof(
  fc.constantFrom<HeaderChange>(
    (headers, at) => rename(headers, at, (name) => name.toLowerCase()),
    (headers, at) => rename(headers, at, (name) => name.toUpperCase()),
    (headers, at) => rename(headers, at, (name) => [...name].map((char, index) => (index % 2 ? char.toUpperCase() : char.toLowerCase())).join("")),
    (headers, at) => rename(headers, at, (name) => `${name} `),
    (headers, at) => rename(headers, at, (name) => `${name}\t`),
    (headers, at) => rename(headers, at, (name) => ` ${name}`),
    (headers, at) => rename(headers, at, () => ""),
    (headers, at) => revalue(headers, at, (value) => `${value}\r\n  folded`),
    (headers, at) => revalue(headers, at, (value) => `${value}\r\n\tfolded`),
    (headers, at) => revalue(headers, at, (value) => `\r\n ${value}`),
    (headers, at) => revalue(headers, at, (value) => ` \t${value}\t `),
    (headers, at) => revalue(headers, at, (value) => `${value}\t`),
    (headers, at) => revalue(headers, at, (value) => `\t${value}`),
    (headers, at) => {
      const header = headers[pick(headers, at)];
      if (header !== undefined) headers.push(header);
    },
    (headers, at) => {
      const header = headers[pick(headers, at)];
      if (header !== undefined) headers.push([header[0].toLowerCase(), `${header[1]}0`]);
    },
    (headers, at) => void headers.splice(pick(headers, at), 1),
    (headers) => headers.push(["Expect", "100-continue"]),
    (headers) => headers.push(["Connection", "close"]),
    (headers) => headers.push(["Connection", "keep-alive"]),
    (headers) => headers.push(["Connection", "Upgrade"]),
    (headers) => headers.push(["Upgrade", "h2c"]),
    (headers) => headers.push(["Connection", "keep-alive, Transfer-Encoding"]),
    (headers) => headers.push(["X-Empty", ""]),
    (headers) => headers.push(["no colon here", ""]),
  ),
  fc.tuple(oddChar, fc.nat()).map(([char, where]): HeaderChange => (headers, at) => rename(headers, at, (name) => insertAt(name, where, char))),
  fc.tuple(valueChar, fc.nat()).map(([char, where]): HeaderChange => (headers, at) => revalue(headers, at, (value) => insertAt(value, where, char))),
);

/** How a header line, or the head, ends instead of CRLF: what lenient parsers also take. */
const oddLineEnd = fc.constantFrom("\n", "\r", "\r\r\n", " \r\n", "\n\r");

/** One change to a valid request; a case has none, or up to three. */
type Mutation =
  | { readonly kind: "header"; readonly change: HeaderChange; readonly at: number }
  | { readonly kind: "line end"; readonly at: number; readonly end: string }
  | { readonly kind: "head end"; readonly end: string }
  // One byte inserted, removed or replaced anywhere in the head, for what the token-level changes miss.
  | { readonly kind: "byte"; readonly how: "insert" | "remove" | "replace"; readonly at: number; readonly bit: string }
  // The body as declared cut short, or with bytes past its end.
  | { readonly kind: "body"; readonly how: "cut" | "longer" };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("header" as const), change: headerChange, at: fc.nat() }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant("line end" as const), at: fc.nat(), end: oddLineEnd }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("head end" as const), end: oddLineEnd }), weight: 1 },
  {
    arbitrary: fc.record({ kind: fc.constant("byte" as const), how: fc.constantFrom("insert" as const, "remove" as const, "replace" as const), at: fc.nat(), bit: fc.constantFrom("\r", "\n", "\u0000", " ", "\t", "\u007f", "\u0080", ":", "\r\n", "\r\n\r\n") }),
    weight: 2,
  },
  { arbitrary: fc.record({ kind: fc.constant("body" as const), how: fc.constantFrom("cut" as const, "longer" as const) }), weight: 1 },
);

interface Single {
  readonly text: string;
}

const single: fc.Arbitrary<Single> = fc
  .record({
    line: requestLine,
    framing,
    chunks: chunkedBody,
    // A third of the cases unchanged past their request line and framing: the valid side of the comparison needs its share.
    mutations: fc.oneof({ arbitrary: fc.constant([]), weight: 1 }, { arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }), weight: 2 }),
  })
  .map(({ line, framing, chunks, mutations }) => {
    const headers: Header[] = [["Host", "gw"], ["Content-Type", "application/json"], ["Authorization", "Bearer k"], ...framing.headers];
    for (const change of mutations) if (change.kind === "header") change.change(headers, change.at);
    const lines = [line, ...headers.map(([name, value]) => (name === "no colon here" ? name : `${name}: ${value}`))];
    const ends = lines.map(() => "\r\n");
    let headEnd = "\r\n";
    let sent = framing.chunked ? chunks : body;
    for (const change of mutations) {
      if (change.kind === "line end") ends[change.at % ends.length] = change.end;
      else if (change.kind === "head end") headEnd = change.end;
      else if (change.kind === "body") sent = change.how === "cut" ? sent.slice(0, Math.floor(sent.length / 2)) : `${sent}{}`;
    }
    let head = lines.map((text, index) => text + ends[index]).join("");
    for (const change of mutations) {
      if (change.kind !== "byte") continue;
      const where = change.at % (head.length + 1);
      head = head.slice(0, where) + (change.how === "remove" ? "" : change.bit) + head.slice(change.how === "insert" ? where : where + 1);
    }
    return { text: `${head}${headEnd}${sent}` };
  });

/** A valid request, exactly as the OpenAI client would send it. */
const validText = `POST ${path} HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nAuthorization: Bearer k\r\nContent-Length: ${length}\r\n\r\n${body}`;

/** One request, or two pipelined on one connection (the second often valid, so a first framed wrong shows in what the second reads). */
const cases = fc.oneof(
  { arbitrary: single.map(({ text }) => ({ text, pipelined: false })), weight: 4 },
  { arbitrary: fc.tuple(single, fc.oneof(fc.constant({ text: validText }), single)).map(([first, second]) => ({ text: first.text + second.text, pipelined: true })), weight: 1 },
);

/** Whether node read this request as the chat completion that was meant: rule 3 holds for it. */
const isValidChat = (parsed: Parsed | undefined): boolean => parsed !== undefined && parsed.method === "POST" && parsed.url === path && parsed.body === body;

describe("the gateway's front against node's own HTTP parser", () => {
  it(
    `refuses what node refuses, frames bodies as node does, and answers a valid chat completion as node would (${runs} cases)`,
    async () => {
      const outcomes = new FailureCounter();
      await fc.assert(
        fc.asyncProperty(cases, async ({ text, pipelined }) => {
          const bytes = Buffer.from(text, "latin1");
          const engineBefore = engineSaw.length;
          const nodeBefore = nodeParsed.length;
          // Node first: how many requests it parsed is how many answers to wait for from the gateway.
          const atNode = await closingExchange(plainPort, bytes, 2500);
          const parsedByNode = nodeParsed.slice(nodeBefore);
          const atGateway = parsedByNode.length === 0 ? await closingExchange(gatewayPort, bytes, 2500) : await answeredExchange(gatewayPort, bytes, parsedByNode.length);
          const askedOfEngine = engineSaw.slice(engineBefore);
          const gatewayStatuses = statusesOf(atGateway);
          const nodeStatuses = statusesOf(atNode);
          const answered = (status: number | undefined): boolean => status !== undefined && status >= 200 && status < 300;
          const shown = `node: ${JSON.stringify(atNode.slice(0, 200))}; gateway: ${JSON.stringify(atGateway.slice(0, 400))}`;
          // Rule 2: nothing reaches an engine that node did not parse, with the same body; nothing answered that node did not parse.
          expect(askedOfEngine.length, `the engine was asked more often than node parsed requests; ${shown}`).toBeLessThanOrEqual(parsedByNode.length);
          for (const asked of askedOfEngine) expect(parsedByNode.map((parsed) => parsed.body), `the engine saw a body node did not parse; ${shown}`).toContain(asked);
          expect(gatewayStatuses.filter(answered).length, `the gateway answered more requests than node parsed; ${shown}`).toBeLessThanOrEqual(parsedByNode.length);
          const kind = pipelined ? " (pipelined)" : "";
          if (parsedByNode.length === 0) {
            // Rule 1: node refused (or never finished) the first request; so does the gateway.
            expect(nodeStatuses.includes(200), `node answered 200 yet recorded nothing; ${shown}`).toBe(false);
            expect(answered(gatewayStatuses[0]), `node refused, the gateway answered; ${shown}`).toBe(false);
            outcomes.count(`both refused${kind}`);
            return;
          }
          const nodeRefusedNothing = nodeStatuses.every((status) => status === 200);
          if (nodeRefusedNothing && parsedByNode.every(isValidChat)) {
            // Rule 3: the same requests answered the same way, each of them.
            expect(gatewayStatuses.length === parsedByNode.length && gatewayStatuses.every(answered), `node parsed valid chat completions; ${shown}`).toBe(true);
            outcomes.count(`both answered${kind}`);
            return;
          }
          outcomes.count(isValidChat(parsedByNode[0]) && !nodeRefusedNothing ? "node parsed the first and refused what followed" : "node parsed another route or body");
        }),
        { numRuns: runs, seed },
      );
      reportChaos({ scenario: "fuzz: the gateway's front against node's parser", sent: runs, succeeded: runs, failed: 0, reasons: new Map(), recovery: "n/a", notes: [...outcomes.reasons].map(([reason, count]) => `${reason} ${count}`).join(", ") });
    },
    60_000,
  );
});
