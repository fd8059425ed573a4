// Validates docs/openapi.yaml against the OpenAPI 3.x meta-schema (a real validator from
// npm), then checks what the meta-schema cannot: every $ref resolves and every
// operation has an operationId and documents its error answers as the Error schema.
import { Validator } from '@seriousme/openapi-schema-validator';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

const file = process.argv[2];
const spec = parse(readFileSync(file, 'utf8'));
const validator = new Validator();
const res = await validator.validate(spec);
let failed = 0;
if (!res.valid) {
  console.error(`not valid OpenAPI ${validator.version}:`, JSON.stringify(res.errors, null, 2));
  failed++;
}
const resolve = (ref) => ref.replace(/^#\//, '').split('/').reduce((o, k) => (o ? o[k] : undefined), spec);
const walk = (node, where) => {
  if (Array.isArray(node)) return node.forEach((x, i) => walk(x, `${where}/${i}`));
  if (!node || typeof node !== 'object') return;
  if (typeof node.$ref === 'string' && resolve(node.$ref) === undefined) {
    console.error(`${where}: $ref ${node.$ref} does not resolve`);
    failed++;
  }
  for (const [k, v] of Object.entries(node)) walk(v, `${where}/${k}`);
};
walk(spec, '#');
// The API's version is the project's (CMakeLists.txt's project()), written once.
const want = process.argv[3];
if (want && spec.info.version !== want) {
  console.error(`info.version ${spec.info.version} is not the project's version ${want}`);
  failed++;
}
let ops = 0;
for (const [path, item] of Object.entries(spec.paths)) {
  for (const [method, op] of Object.entries(item)) {
    if (!['get', 'post', 'put', 'delete', 'patch', 'head'].includes(method)) continue;
    ops++;
    if (!op.operationId) { console.error(`${method} ${path}: no operationId`); failed++; }
    for (const [status, r0] of Object.entries(op.responses)) {
      const r = r0.$ref ? resolve(r0.$ref) : r0;
      const s = r.content && r.content['application/json'] && r.content['application/json'].schema;
      if (Number(status) >= 400 && !(s && s.$ref === '#/components/schemas/Error')) {
        console.error(`${method} ${path} ${status}: an error answer must be the Error schema`);
        failed++;
      }
    }
  }
}
console.log(`${file}: OpenAPI ${validator.version}, ${ops} operations, ${failed ? 'FAILED' : 'valid'}`);
console.log(`${failed ? 0 : 1} passed, ${failed ? 1 : 0} failed`);
process.exit(failed ? 1 : 0);
