import { quoteForShell } from "../files/index.js";

/**
 * curl's `-F field=@file`, for any file name: curl itself splits the value at
 * `;` (`;type=...`) and `,`, so such a name goes in double quotes (with `"` and
 * `\` escaped), as curl's manual says; then the whole argument is quoted for
 * the shell.
 */
function curlFormFile(field: string, file: string): string {
  const name = /[;,"\\]/.test(file) ? `"${file.replace(/[\\"]/g, (character) => `\\${character}`)}"` : file;
  return `-F ${quoteForShell(`${field}=@${name}`)}`;
}

/**
 * The curl line that turns `image` into a mesh through the gateway's
 * image-to-3D endpoint and writes it to `output`. Both paths are absolute, so
 * the line works pasted in any folder.
 */
export function imageToMeshLine(gatewayUrl: string, model: string, image: string, output: string): string {
  return `curl -s ${curlFormFile("image", image)} ${gatewayUrl}/v1/llmgw/comfy/${encodeURIComponent(model)} -o ${quoteForShell(output)}`;
}
