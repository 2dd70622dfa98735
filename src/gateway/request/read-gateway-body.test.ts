import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DomainError } from "../../errors/domain-error.js";
import { gatewayBodySchema } from "../wire/prompt-text.js";
import { readGatewayBody } from "./read-gateway-body.js";

const read = (value: unknown) => readGatewayBody(Buffer.from(typeof value === "string" ? value : JSON.stringify(value)));

function refusal(value: unknown): string {
  try {
    read(value);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe("invalid_input");
    return (error as DomainError).message;
  }
  throw new Error(`accepted ${JSON.stringify(value)}`);
}

/** Values of the shapes the checked fields take, right and wrong, so both sides of every check are reached. */
const scalar = fc.oneof(fc.string({ maxLength: 3 }), fc.boolean(), fc.constant(null), fc.integer({ min: -2, max: 5 }), fc.double({ noNaN: true, noDefaultInfinity: true }));
const near = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.array(fc.array(fc.integer(), { maxLength: 2 }), { maxLength: 2 }), fc.dictionary(fc.constantFrom("type", "text", "role", "content", "include_usage"), scalar));
const message = fc.oneof(
  near,
  fc.record({ role: fc.oneof(fc.string(), scalar), content: fc.oneof(near, fc.array(fc.record({ type: near, text: near }, { requiredKeys: [] }), { maxLength: 2 })) }, { requiredKeys: [] }),
);
const body = fc.record(
  {
    model: fc.oneof(fc.constantFrom("chat", ""), scalar),
    stream: near,
    stream_options: fc.oneof(near, fc.record({ include_usage: near }, { requiredKeys: [] })),
    max_tokens: fc.oneof(near, fc.constant(2 ** 60)),
    max_completion_tokens: near,
    messages: fc.oneof(near, fc.array(message, { maxLength: 3 })),
    prompt: near,
    input: near,
    temperature: near,
  },
  { requiredKeys: [] },
);

describe("reading a /v1 body by hand", () => {
  it("accepts exactly the bodies the schema accepts, and keeps every field", () => {
    fc.assert(
      fc.property(fc.oneof(body, near), (value) => {
        const schema = gatewayBodySchema.safeParse(value);
        let hand: unknown;
        try {
          hand = read(value);
        } catch {
          hand = undefined;
        }
        expect(hand !== undefined).toBe(schema.success);
        if (schema.success) expect(hand).toEqual(schema.data);
      }),
      { numRuns: 2000 },
    );
  });

  it("says which field is wrong and why", () => {
    expect(refusal("{not json")).toBe("the request body is not JSON");
    expect(refusal([1])).toBe("body (top level): expected a JSON object");
    expect(refusal({ messages: [] })).toBe("body model: required: the model to use, as GET /v1/models lists it");
    expect(refusal({ model: "" })).toMatch(/^body model: must not be empty/);
    expect(refusal({ model: "m", stream: "yes" })).toBe("body stream: expected a boolean or null");
    expect(refusal({ model: "m", stream_options: 1 })).toBe("body stream_options: expected an object");
    expect(refusal({ model: "m", stream_options: { include_usage: 1 } })).toBe("body stream_options.include_usage: expected a boolean or null");
    expect(refusal({ model: "m", max_tokens: 1.5 })).toBe("body max_tokens: expected a whole number of at least 0 or null");
    expect(refusal({ model: "m", max_completion_tokens: -1 })).toBe("body max_completion_tokens: expected a whole number of at least 0 or null");
    expect(refusal({ model: "m", messages: {} })).toBe("body messages: expected an array of messages");
    expect(refusal({ model: "m", messages: ["hi"] })).toBe("body messages.0: expected a message object");
    expect(refusal({ model: "m", messages: [{ content: "hi" }] })).toBe("body messages.0.role: expected a string");
    expect(refusal({ model: "m", messages: [{ role: "user", content: 3 }] })).toBe("body messages.0.content: expected a string, an array of content parts, or null");
    expect(refusal({ model: "m", messages: [{ role: "user", content: [null] }] })).toBe("body messages.0.content.0: expected a content part object");
    expect(refusal({ model: "m", messages: [{ role: "user", content: [{ type: 1 }] }] })).toBe("body messages.0.content.0.type: expected a string");
    expect(refusal({ model: "m", messages: [{ role: "user", content: [{ text: false }] }] })).toBe("body messages.0.content.0.text: expected a string");
    expect(refusal({ model: "m", prompt: ["a", 1] })).toMatch(/^body prompt: expected a string, an array of strings/);
    expect(refusal({ model: "m", input: 7 })).toMatch(/^body input: expected a string/);
  });

  it("keeps fields it does not check, for the engine to judge", () => {
    expect(read({ model: "m", temperature: 0.2, tools: [{ type: "function" }] })).toEqual({ model: "m", temperature: 0.2, tools: [{ type: "function" }] });
  });
});
