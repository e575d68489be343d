'use strict';
// The placeholder account the registry sweep connects to each app prop: fields as a user would fill
// them when connecting the app. An app's code says which fields it reads, so the account is shaped
// per app: every field it reads has a value, and `key` is an API key unless the app reads TLS material.
const fs = require('node:fs');
const path = require('node:path');
const { generateKeyPairSync } = require('node:crypto');

// Fields apps commonly read, with plausible values (also those an app reads in ways not seen below).
const COMMON = {
  oauth_access_token: 'placeholder-token', oauth_refresh_token: 'placeholder-token', api_key: 'placeholder-key', api_token: 'placeholder-token', token: 'placeholder-token',
  accessKeyId: 'AKIAPLACEHOLDER0000', secretAccessKey: 'placeholder-secret', region: 'us-east-1',
  host: 'db.example.com', port: 5432, user: 'placeholder', username: 'placeholder', password: 'placeholder', database: 'placeholder', rejectUnauthorized: 'false',
  access_token: 'placeholder-token', consumer_key: 'ck_placeholder', consumer_secret: 'cs_placeholder', url: 'https://example.com',
  // Twilio's SDK checks the shape of an account SID (`AC` and 32 hex digits) before any request.
  AccountSid: `AC${'0'.repeat(32)}`, accountSid: `AC${'0'.repeat(32)}`,
  shop_id: 'placeholder-shop', domain: 'example.com', subdomain: 'example', base_url: 'https://example.com', base_uri: 'https://example.com', client_id: 'placeholder', client_secret: 'placeholder', account_id: 'placeholder',
};

/** A plausible value for a field the app reads that COMMON does not have, by its name. */
function valueByName(field) {
  // Ghost's Admin API key is `<id>:<hex secret>`, split and hex-decoded before any request.
  if (/admin_api_key/i.test(field)) return `${'0'.repeat(24)}:${'0'.repeat(64)}`;
  if (/url|uri|endpoint/i.test(field)) return 'https://example.com';
  // Three labels, as a real server's name has: MongoDB's driver refuses an SRV host without a subdomain.
  if (/host/i.test(field)) return 'db.example.com';
  if (/email/i.test(field)) return 'placeholder@example.com';
  if (/secret/i.test(field)) return 'placeholder-secret';
  if (/key/i.test(field)) return 'placeholder-key';
  return 'placeholder';
}

const CODE = /\.(mjs|cjs|js|ts)$/;

/** Code files of an app folder (its own, not its installed dependencies). */
function codeFiles(dir, out = []) {
  for (const name of fs.readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const file = path.join(dir, name);
    const stat = fs.statSync(file);
    if (stat.isDirectory()) codeFiles(file, out);
    else if (CODE.test(name) && !name.endsWith('.d.ts') && stat.size < 2_000_000) out.push(file);
  }
  return out;
}

/**
 * The `$auth` fields an app folder's code reads: `$auth.x`, `$auth?.x`, `$auth["x"]`, and the names
 * destructured from it (`const { host, key, ssl_verification_mode: mode } = this.$auth`).
 */
function authFields(appDir) {
  const fields = new Set();
  for (const file of codeFiles(appDir)) {
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\$auth\??\.([A-Za-z_$][\w$]*)|\$auth\[\s*["'`]([^"'`]+)["'`]\s*\]/g)) fields.add(m[1] ?? m[2]);
    for (const m of text.matchAll(/\{([^{}]*)\}\s*=\s*(?:this\.)?(?:[\w$]+\.)?\$auth\b(?!\s*\.)/g)) {
      for (const part of m[1].split(',')) {
        const name = part.trim().split(/[:=]/)[0].trim();
        if (/^[A-Za-z_$][\w$]*$/.test(name)) fields.add(name);
      }
    }
  }
  return fields;
}

// A private key is parsed before any request (Snowflake's key-pair login, Google's service account).
const PRIVATE_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
const SERVICE_ACCOUNT = JSON.stringify({ type: 'service_account', project_id: 'placeholder', private_key_id: 'placeholder', private_key: PRIVATE_KEY, client_email: 'placeholder@placeholder.iam.gserviceaccount.com', client_id: '0' });

/** Fields an app puts first in a URL (`${this.$auth.api_domain}/api`): a URL, whatever their name says. */
function urlBaseFields(appDir) {
  const fields = new Set();
  for (const file of codeFiles(appDir)) {
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/`\$\{(?:this\.)?\$auth\??\.([A-Za-z_$][\w$]*)(\.replace\([^`]*?\))?\}(\/?)/g)) if ((m[2] || m[3]) && !/(^|_)id$/i.test(m[1])) fields.add(m[1]);
  }
  return fields;
}

/** The placeholder `$auth` for the app whose code is in `appDir`. */
function placeholderAuth(appDir) {
  const fields = authFields(appDir);
  const auth = { ...COMMON, private_key: PRIVATE_KEY, key_json: SERVICE_ACCOUNT };
  for (const f of fields) if (!(f in auth)) auth[f] = valueByName(f);
  for (const f of urlBaseFields(appDir)) auth[f] = 'https://example.com';
  // TLS material of a database connection (`ca`, `cert`, and `key` beside them) is left empty, as a user
  // who connects without client certificates leaves it; in an app that reads no `ca`/`cert`, `key` is an API key.
  const tls = fields.has('ca') || fields.has('cert');
  auth.ca = '';
  auth.cert = '';
  auth.key = tls ? '' : 'placeholder-key';
  return auth;
}

/**
 * The account as a user whose hooks failed with "Invalid URL" would fill it in: every field that is no
 * credential or id an address (an app may take its `domain`, `region` or `environment` for the start of
 * its API's URL, which only its code says).
 */
function urlShapedAuth(auth) {
  const out = { ...auth };
  for (const [k, v] of Object.entries(auth)) if (typeof v === 'string' && v && !/token|key|secret|password|sid|(^|_)id$/i.test(k)) out[k] = 'https://example.com';
  return out;
}

module.exports = { placeholderAuth, urlShapedAuth, authFields, codeFiles };
