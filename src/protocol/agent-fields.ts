import { z } from "zod";

/** The agent protocol's version: every message carries it (agent-protocol.ts says why). */
export const protocolVersion = 1 as const;
export const protocolField = z.literal(protocolVersion);

export const byteCount = z.number().int().min(0);

const maxReasonLength = 16 * 1024;
/** A reason or message a peer wrote: cut, never refused, when it is too long (an engine's log tail). */
export const prose = z.string().transform((text) => (text.length > maxReasonLength ? `${text.slice(0, maxReasonLength)} [cut at ${maxReasonLength} characters]` : text));

/**
 * Everything an agent sends is outside input, checked as strictly as a
 * user's body: the server stores it and every admin view reads it, so one
 * malformed message from a node holding a valid credential must be refused
 * at the door, not kept to break a view later. Identifiers and URLs are
 * bounded and refused past the bound; free prose (a failure reason with its
 * log tail) is cut to its bound instead, since refusing it would lose the
 * node's whole heartbeat over a long log line.
 */
export const identifier = (what: string, max = 128) =>
  z
    .string()
    .min(1, { message: `${what} is empty` })
    .max(max, { message: `${what} is longer than ${max} characters` })
    // A name shown in every view and log line: a tab or newline in it would forge columns and lines.
    // eslint-disable-next-line no-control-regex -- control characters are what this finds, on purpose
    .regex(/^[^\u0000-\u001f\u007f]*$/, { message: `${what} holds a control character (a tab, a newline or another below space); names are printable text` });
export const label = (what: string) => z.string().max(256, { message: `${what} is longer than 256 characters` });
/** No machine has more; a larger index or count is a malformed message, not hardware. */
export const maxCardsPerNode = 1024;
export const cardIndex = z.number().int().min(0).max(maxCardsPerNode - 1);
export const cardList = z.array(cardIndex).max(maxCardsPerNode);
