/**
 * The router's limit on one path segment, counted on the encoded segment.
 * The longest name or id a schema accepts is 128 characters, and / and :
 * take 3 each once percent-encoded; with fastify's default of 100, a model
 * that `add` had just accepted answered 414 on show, scale and remove. Twice
 * the worst case leaves room for a character a schema allows later.
 */
export const maxParamLength = 128 * 3 * 2;
