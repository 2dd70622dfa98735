import { describe, expect, it } from "vitest";
import { RecordingResponse } from "../testing/recording-response.js";
import { TranslatingResponse } from "./translating-response.js";
import { messagesTranslator } from "./anthropic-messages/messages-translator.js";

const translator = () => messagesTranslator({ model: "asked", stopSequences: [] });

describe("a response that translates what the request path writes", () => {
  it("sends a JSON answer translated whole, with its own length and the path's other headers", () => {
    const client = new RecordingResponse();
    const response = new TranslatingResponse(client, translator());
    const chat = JSON.stringify({ id: "c", model: "m", choices: [{ finish_reason: "stop", message: { content: "Hi" } }], usage: { prompt_tokens: 1, completion_tokens: 1 } });
    response.writeHead(200, ["x-request-id", "r1", "x-llmgw-model", "m", "content-type", "application/json", "content-length", String(chat.length)]);
    expect(client.headersSent).toBe(false);
    expect(response.headersSent).toBe(true);
    response.write(chat.slice(0, 10));
    response.end(chat.slice(10));
    expect(client.status).toBe(200);
    expect(JSON.parse(client.body)).toMatchObject({ type: "message", content: [{ type: "text", text: "Hi" }] });
    expect(client.headers).toMatchObject({ "x-request-id": "r1", "x-llmgw-model": "m", "content-type": "application/json", "content-length": String(Buffer.byteLength(client.body)) });
  });

  it("translates an error answer with its status", () => {
    const client = new RecordingResponse();
    const response = new TranslatingResponse(client, translator());
    response.writeHead(429, { "content-type": "application/json", "retry-after": "3" });
    response.end(JSON.stringify({ error: { message: "slow down", type: "rate_limit_error", param: null, code: "rate_limited" } }));
    expect(client.status).toBe(429);
    expect(client.headers["retry-after"]).toBe("3");
    expect(JSON.parse(client.body)).toEqual({ type: "error", error: { type: "rate_limit_error", message: "rate_limited: slow down" } });
  });

  it("answers 502 in the client's shape when an engine's answer is not a chat completion", () => {
    const client = new RecordingResponse();
    const response = new TranslatingResponse(client, translator());
    response.writeHead(200, { "content-type": "application/json" });
    response.end("<html>proxy page</html>");
    expect(client.status).toBe(502);
    expect(JSON.parse(client.body)).toMatchObject({ type: "error", error: { type: "api_error" } });
    expect(JSON.parse(client.body).error.message).toContain("could not be read as a chat completion");
  });
});
