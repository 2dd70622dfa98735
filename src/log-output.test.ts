import pino from "pino";
import { describe, expect, it } from "vitest";
import { logSettings, prettyLogLine } from "./log-output.js";

const at = Date.UTC(2026, 11, 7, 17, 30, 5, 123);

describe("the pretty log line", () => {
  it("writes time, level and message first, then the fields as key=value, leaving out pid and hostname", () => {
    const line = JSON.stringify({ level: 30, time: at, pid: 4242, hostname: "gpu-1", name: "llmgw-agent", msg: "agent-joined", node: "gpu-1", server: "http://10.0.0.1:8080" });
    expect(prettyLogLine(line)).toBe("2026-12-07T17:30:05.123Z INFO  agent-joined name=llmgw-agent node=gpu-1 server=http://10.0.0.1:8080\n");
  });

  it("flattens nested fields and quotes a value with spaces, quotes or an equals sign", () => {
    const line = JSON.stringify({ level: 40, time: at, msg: "request completed", req: { method: "GET", url: "/v1/models?a=b" }, res: { statusCode: 200 }, reason: 'no "h100" free', cards: [0, 1], empty: "" });
    expect(prettyLogLine(line)).toBe(
      '2026-12-07T17:30:05.123Z WARN  request completed req.method=GET req.url="/v1/models?a=b" res.statusCode=200 reason="no \\"h100\\" free" cards=[0,1] empty=""\n',
    );
  });

  it("keeps an entry on one line: line breaks in the message and in an error's stack are escaped", () => {
    const line = JSON.stringify({ level: 50, time: at, msg: "first\nsecond", err: { type: "Error", message: "boom", stack: "Error: boom\n    at run (file.js:1:1)" } });
    const pretty = prettyLogLine(line);
    expect(pretty.split("\n")).toEqual([expect.any(String), ""]);
    expect(pretty).toBe('2026-12-07T17:30:05.123Z ERROR first\\nsecond err.type=Error err.message=boom err.stack="Error: boom\\n    at run (file.js:1:1)"\n');
  });

  it("passes a line that is not a JSON object on as it is", () => {
    expect(prettyLogLine("not json")).toBe("not json\n");
    expect(prettyLogLine("[1,2]\n")).toBe("[1,2]\n");
  });

  it("is what a pino logger writes with the pretty settings, and json leaves pino's own line", () => {
    const written: string[] = [];
    const output = { write: (text: string) => written.push(text) };
    const { stream, ...options } = logSettings("info", "pretty", output);
    const logger = pino({ ...options, name: "llmgw-agent" }, stream);
    logger.debug("not at info");
    logger.info({ replica: "r-1" }, "replica-ready");
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO  replica-ready name=llmgw-agent replica=r-1\n$/);
    expect(logSettings("warn", "json", output)).toEqual({ level: "warn" });
  });
});
