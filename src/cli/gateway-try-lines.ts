/**
 * Lines a newcomer pastes into another terminal: curl and the openai SDK
 * (Python and Node), streaming from the gateway's /v1, never a replica's own
 * port (whose engine wants its replica key). Each SDK line is preceded by what
 * to install first, said in words (not a line to paste: outside a clone the
 * import fails without it, and pip or npm may need the network).
 */
export function gatewayTryLines(url: string, model: string, keyed = false): string[] {
  const base = `${url}/v1`;
  // A gateway that checks keys answers a line without one 401: the key is read from the shell's LLMGW_KEY.
  const key = keyed ? "$LLMGW_KEY" : "none";
  return [
    ...(keyed
      ? [`  This gateway checks keys: make one with \`llmgw ctl key create NAME --models ${model}\`, then export LLMGW_KEY=the key it prints.`]
      : []),
    `  curl -sN ${base}/chat/completions -H 'content-type: application/json'${keyed ? ' -H "authorization: Bearer $LLMGW_KEY"' : ""} \\`,
    `       -d '{"model": "${model}", "stream": true, "messages": [{"role": "user", "content": "Hello"}]}'`,
    "  With the OpenAI SDK for Python (`pip install openai` first):",
    `  python3 -c "from openai import OpenAI; s = OpenAI(base_url='${base}', api_key='${key}').chat.completions.create(model='${model}', stream=True, messages=[{'role': 'user', 'content': 'Hello'}]); [print(c.choices[0].delta.content or '', end='', flush=True) for c in s if c.choices]; print()"`,
    "  With the OpenAI SDK for Node (`npm install openai` in the folder you run it from, first):",
    `  node --input-type=module -e "import OpenAI from 'openai'; const s = await new OpenAI({ baseURL: '${base}', apiKey: '${key}' }).chat.completions.create({ model: '${model}', stream: true, messages: [{ role: 'user', content: 'Hello' }] }); for await (const c of s) process.stdout.write(c.choices[0]?.delta?.content ?? ''); console.log()"`,
  ];
}
