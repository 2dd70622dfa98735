import type { BodyRefusalWords } from "../openai-server/body-route.js";

/** A refused body in vLLM's words: its exception's name as the type, whatever engine the simulation answers as. */
export const simBodyRefusal: BodyRefusalWords = { type: "BadRequestError", bodyName: "body" };
