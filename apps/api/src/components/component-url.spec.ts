import { hasRelativeImports, looksLikeEsm, rawFileUrl } from './component-url';

describe('component-url helpers', () => {
  it.each([
    ['import app from "../../acme.app.mjs";', true],
    ['import "./side-effect.js";', true],
    ['export { x } from "./x.mjs";', true],
    ['const common = require("../common/base");', true],
    ['const _ = require("lodash");', false],
    ['import { axios } from "@pipedream/platform";', false],
    ['// no imports\nmodule.exports = {};', false],
  ])('hasRelativeImports(%j) = %s', (code, expected) => {
    expect(hasRelativeImports(code)).toBe(expected);
  });

  it.each([
    ['export default { name: "x" };', true],
    ['const c = {};\nexport { c as default };', true],
    ['import x from "y";\nmodule.exports = x;', true],
    ['module.exports = { name: "export default" };', false],
    ['const x = require("y");\nmodule.exports = x;', false],
  ])('looksLikeEsm(%j) = %s', (code, expected) => {
    expect(looksLikeEsm(code)).toBe(expected);
  });

  it.each([
    ['https://github.com/PipedreamHQ/pipedream/blob/master/components/rss/sources/new-item-in-feed/new-item-in-feed.ts', 'https://raw.githubusercontent.com/PipedreamHQ/pipedream/master/components/rss/sources/new-item-in-feed/new-item-in-feed.ts'],
    ['https://github.com/PipedreamHQ/pipedream/tree/master/components', 'https://github.com/PipedreamHQ/pipedream/tree/master/components'],
    ['http://127.0.0.1:8080/x/blob/y.mjs', 'http://127.0.0.1:8080/x/blob/y.mjs'],
  ])('rawFileUrl(%s) = %s', (from, to) => {
    expect(rawFileUrl(new URL(from)).href).toBe(to);
  });
});
