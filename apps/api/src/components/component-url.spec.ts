import { hasRelativeImports, looksLikeEsm } from './component-url';

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
});
