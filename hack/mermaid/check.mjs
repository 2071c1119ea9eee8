// check.mjs parses every ```mermaid block of the Markdown files given on
// the command line with Mermaid's own parser (in a jsdom window) and exits
// 1 if one does not parse or a file has none.
//
//   cd hack/mermaid && npm ci && node check.mjs ../../out/docs/nodegroups.md
import fs from 'node:fs';
import { JSDOM } from 'jsdom';

const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false });

let failed = false;
for (const file of process.argv.slice(2)) {
  const md = fs.readFileSync(file, 'utf8');
  const blocks = [...md.matchAll(/```mermaid\n([\s\S]*?)```/g)].map((m) => m[1]);
  if (blocks.length === 0) {
    console.error(`${file}: no mermaid diagram`);
    failed = true;
  }
  for (const [i, text] of blocks.entries()) {
    try {
      const { diagramType } = await mermaid.parse(text);
      console.log(`${file}: diagram ${i + 1}: ${diagramType}: ok`);
    } catch (e) {
      console.error(`${file}: diagram ${i + 1}: ${e.message ?? e}`);
      failed = true;
    }
  }
}
process.exit(failed ? 1 : 0);
