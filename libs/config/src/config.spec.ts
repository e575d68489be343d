import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { ConfigError, loadConfig, urlForDisplay, parseDurations, MAX_DURATION_MS, SETTINGS } from './config';

describe('configuration', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cfg-'));

  it('applies defaults', () => {
    const c = loadConfig({ DATA_DIR: dataDir });
    expect(c.port).toBe(3000);
    expect(c.publicUrl).toBe('http://localhost:3000');
    expect(c.secretsKey).toHaveLength(32);
    expect(c.webhookRetryDelaysMs).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
  });

  it('keeps the generated secrets key across loads', () => {
    expect(loadConfig({ DATA_DIR: dataDir }).secretsKey.equals(loadConfig({ DATA_DIR: dataDir }).secretsKey)).toBe(true);
  });

  it.each([
    [{ PORT: 'abc' }, /PORT must be an integer/],
    [{ PORT: '70000' }, /PORT must be at most 65535/],
    [{ DATABASE_URL: 'not a url' }, /DATABASE_URL must be a URL/],
    [{ ALLOW_LOOPBACK: 'maybe' }, /ALLOW_LOOPBACK must be true or false/],
    [{ SECRETS_KEY: 'short' }, /SECRETS_KEY must hold 32 bytes/],
    [{ WEBHOOK_RETRY_SCHEDULE: '5s,soon' }, /WEBHOOK_RETRY_SCHEDULE/],
    [{ LOG_LEVEL: 'verbose' }, /LOG_LEVEL must be fatal, error, warn, info, debug, trace or silent, got "verbose"/],
    [{ WORKER_VM_TIMEOUT: 'sometimes' }, /WORKER_VM_TIMEOUT must be always, adaptive or never/],
    [{ PUBLIC_URL: 'localhost:3000' }, /PUBLIC_URL must be a http:\/\/ or https:\/\/ URL/],
    [{ PUBLIC_URL: 'https://events.example.com/?region=eu' }, /^PUBLIC_URL must be a base URL without a query or fragment, got "https:\/\/events.example.com\/\?region=eu"$/],
    [{ PUBLIC_URL: 'https://events.example.com#x' }, /PUBLIC_URL must be a base URL without a query or fragment/],
    [{ DATABASE_URL: 'mysql://db/app' }, /DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/],
    [{ NATS_URL: 'http://127.0.0.1:4222' }, /NATS_URL must be a comma-separated list of nats:\/\/host:port/],
    [{ NATS_URL: 'nats://a:4222,' }, /NATS_URL/],
    [{ ENDPOINT_DOMAIN: 'https://hooks.example.com' }, /ENDPOINT_DOMAIN must be a domain name/],
    [{ NPM_REGISTRY: 'registry.npmjs.org' }, /NPM_REGISTRY must be a/],
    [{ NPM_REGISTRY: 'ftp://registry.example.com' }, /NPM_REGISTRY must be a http:\/\/ or https:\/\/ URL/],
    [{ NATS_PREFIX: 'team.a' }, /NATS_PREFIX may hold letters, digits, _ and - only/],
    [{ NATS_USER: 'api' }, /NATS_USER is set without NATS_PASSWORD/],
    [{ NATS_PASSWORD: 'x' }, /NATS_PASSWORD is set without NATS_USER/],
    [{ NATS_USER: 'api', NATS_PASSWORD: 'x', NATS_TOKEN: 't' }, /NATS_USER and NATS_TOKEN are both set/],
    [{ NATS_USER: 'api', NATS_PASSWORD: 'x', NATS_PASSWORD_FILE: '/x' }, /NATS_PASSWORD and NATS_PASSWORD_FILE are both set/],
    [{ NATS_USER: 'api', NATS_PASSWORD_FILE: '/nonexistent/nats-password' }, /NATS_PASSWORD_FILE \/nonexistent\/nats-password cannot be read: ENOENT/],
    [{ NATS_INBOX_PREFIX: '_INBOX.>' }, /NATS_INBOX_PREFIX must be a subject/],
    [{ RUN_TIMEOUT_MS: '600000', MAX_RUN_TIMEOUT_MS: '300000' }, /RUN_TIMEOUT_MS \(600000\) must not exceed MAX_RUN_TIMEOUT_MS/],
    [{ SMTP_URL: 'http://x' }, /^SMTP_URL must be a smtp:\/\/ or smtps:\/\/ URL, got "http:\/\/x"$/],
    [{ SMTP_URL: 'mail.example.com:25' }, /SMTP_URL must be a smtp:\/\/ or smtps:\/\/ URL/],
    [{ SMTP_URL: 'smtp://user:secret@' }, /^SMTP_URL must be a smtp:\/\/ or smtps:\/\/ URL, got "smtp:\/\/\*\*\*@"$/],
    [{ S3_ENDPOINT: 'notaurl' }, /S3_ENDPOINT must be a URL, got "notaurl"/],
    [{ S3_ENDPOINT: 's3://bucket' }, /S3_ENDPOINT must be a http:\/\/ or https:\/\/ URL/],
    [{ SANDBOX_EGRESS_ALLOW: 'nonsense' }, /^SANDBOX_EGRESS_ALLOW must be a comma-separated list of ip, cidr, ip:port or cidr:port .*, got "nonsense"$/],
    [{ SANDBOX_EGRESS_ALLOW: '10.0.0.0/33' }, /SANDBOX_EGRESS_ALLOW .*got "10.0.0.0\/33"/],
    [{ SANDBOX_EGRESS_ALLOW: '10.0.0.1:70000' }, /SANDBOX_EGRESS_ALLOW .*got "10.0.0.1:70000"/],
    [{ SANDBOX_EGRESS_DENY: '10.0.0.1, example.com' }, /SANDBOX_EGRESS_DENY .*got "example.com"/],
    [{ TRUST_PROXY: 'yes' }, /^TRUST_PROXY must be empty, true, a number of proxy hops or a comma-separated list of addresses and CIDRs \(127.0.0.1,10.0.0.0\/8\), got "yes"$/],
    [{ TRUST_PROXY: '-1' }, /^TRUST_PROXY must be .*, got "-1"$/],
    [{ TRUST_PROXY: '1.5' }, /^TRUST_PROXY must be .*, got "1.5"$/],
    [{ TRUST_PROXY: '10.0.0.0/33' }, /^TRUST_PROXY must be .*, got "10.0.0.0\/33"$/],
    [{ TRUST_PROXY: '127.0.0.1, proxy.internal' }, /^TRUST_PROXY must be .*, got "proxy.internal"$/],
    // Longer than a timer holds: each webhook attempt used to time out after 1 ms, the keep-alive of held messages ran every 1 ms.
    [{ WEBHOOK_TIMEOUT_MS: '3000000000' }, /^WEBHOOK_TIMEOUT_MS must be at most 2147483647 \(about 24.8 days, the longest delay a timer holds\), got 3000000000$/],
    [{ DELIVERY_ACK_WAIT_MS: '99999999999999999999999' }, /^DELIVERY_ACK_WAIT_MS must be at most 2147483647 .*, got 99999999999999999999999$/],
    [{ DB_STATEMENT_TIMEOUT_MS: '2147483648' }, /^DB_STATEMENT_TIMEOUT_MS must be at most 2147483647/],
    // A retry due past bigint could not be written: the attempt was made again a second later instead of after the delay.
    [{ WEBHOOK_RETRY_SCHEDULE: '5s,30d' }, /^WEBHOOK_RETRY_SCHEDULE entries must be at most 2147483647 ms \(about 24.8 days, the longest delay a timer holds\); bad entry "30d"$/],
    [{ WEBHOOK_RETRY_SCHEDULE: '99999999999999999999999d' }, /WEBHOOK_RETRY_SCHEDULE entries must be at most/],
    [{ TIMER_MIN_INTERVAL_SECONDS: '31622401' }, /^TIMER_MIN_INTERVAL_SECONDS must be at most 31622400 \(366 days, the longest intervalSeconds a timer takes\), got 31622401$/],
    [{ EMITS_MAX_AGE_SECONDS: '1000000000000' }, /^EMITS_MAX_AGE_SECONDS must be at most 9223372036 \(about 292 years: NATS holds the age in nanoseconds\)/],
  ])('names the variable of a wrong value: %p', (env, message) => {
    expect(() => loadConfig({ DATA_DIR: dataDir, ...env })).toThrow(message);
  });

  it('accepts the usual server and URL forms', () => {
    const c = loadConfig({ DATA_DIR: dataDir, NATS_URL: 'nats://a:4222, tls://b:4222,127.0.0.1:4223', DATABASE_URL: 'postgresql://u:p@h:5432/d', PUBLIC_URL: 'https://events.example.com/', LOG_LEVEL: 'debug', NATS_PREFIX: 't_1-x' });
    expect(c.publicUrl).toBe('https://events.example.com');
    expect(c.logLevel).toBe('debug');
  });

  it('accepts every SMTP_URL form the mailer reads, http(s) S3 endpoints and every egress rule form', () => {
    for (const smtp of ['smtp://mail.example.com', 'smtp://user:p%40ss@mail.example.com:587', 'smtps://mail.example.com', 'smtps://u:p@127.0.0.1:465']) {
      expect(loadConfig({ DATA_DIR: dataDir, SMTP_URL: smtp }).smtpUrl).toBe(smtp);
    }
    expect(loadConfig({ DATA_DIR: dataDir, S3_ENDPOINT: 'http://127.0.0.1:9000' }).s3Endpoint).toBe('http://127.0.0.1:9000');
    expect(loadConfig({ DATA_DIR: dataDir, S3_ENDPOINT: 'https://s3.eu-west-1.amazonaws.com/prefix' }).s3Endpoint).toBe('https://s3.eu-west-1.amazonaws.com/prefix');
    const rules = '10.0.0.5, 10.1.0.0/16, 192.168.1.2:5432, 172.16.0.0/12:443, ::1, [::1]:8080, fd00::/8, [fd00::/8]:53,';
    expect(loadConfig({ DATA_DIR: dataDir, SANDBOX_EGRESS_ALLOW: rules, SANDBOX_EGRESS_DENY: rules }).sandboxEgressAllow).toBe(rules);
  });

  it('reads the NATS password from NATS_PASSWORD or NATS_PASSWORD_FILE, and never shows one in NATS_URL', () => {
    expect(loadConfig({ DATA_DIR: dataDir, NATS_USER: 'api', NATS_PASSWORD: 's3cret' })).toMatchObject({ natsUser: 'api', natsPassword: 's3cret', natsInboxPrefix: '_INBOX' });
    const file = join(dataDir, 'nats-password');
    writeFileSync(file, 'from-file\n', { mode: 0o600 });
    expect(loadConfig({ DATA_DIR: dataDir, NATS_USER: 'api', NATS_PASSWORD_FILE: file }).natsPassword).toBe('from-file');
    expect(urlForDisplay('nats://api:s3cret@a:4222,tls://tok@b:4222, c:4222')).toBe('nats://***@a:4222,tls://***@b:4222, c:4222');
    expect(() => loadConfig({ DATA_DIR: dataDir, NATS_URL: 'http://api:s3cret@a:4222' })).toThrow(/got "http:\/\/\*\*\*@a:4222"/);
  });

  it('names DATA_DIR, without a stack trace, when the secrets key cannot be kept there', () => {
    const file = join(dataDir, 'a-file');
    writeFileSync(file, 'not a directory');
    expect(() => loadConfig({ DATA_DIR: join(file, 'data') })).toThrow(ConfigError);
    expect(() => loadConfig({ DATA_DIR: join(file, 'data') })).toThrow(
      new ConfigError(`DATA_DIR ${join(file, 'data')}: the generated secrets key cannot be written there: ENOTDIR (set DATA_DIR to a writable directory, or SECRETS_KEY)`),
    );
    const keyIsDir = mkdtempSync(join(tmpdir(), 'cfg-'));
    mkdirSync(join(keyIsDir, 'secrets.key'));
    expect(() => loadConfig({ DATA_DIR: keyIsDir })).toThrow(new ConfigError(`DATA_DIR ${keyIsDir}: ${join(keyIsDir, 'secrets.key')} cannot be read: EISDIR (set DATA_DIR to a writable directory, or SECRETS_KEY)`));
    expect(loadConfig({ DATA_DIR: join(file, 'data'), SECRETS_KEY: 'ab'.repeat(32) }).secretsKey).toHaveLength(32);
  });

  it('raises the run timeout cap to a larger default run timeout unless the cap is set', () => {
    expect(loadConfig({ DATA_DIR: dataDir, RUN_TIMEOUT_MS: '600000' }).maxRunTimeoutMs).toBe(600_000);
    expect(loadConfig({ DATA_DIR: dataDir, RUN_TIMEOUT_MS: '1000' }).maxRunTimeoutMs).toBe(300_000);
  });

  it('parses duration lists', () => {
    expect(parseDurations('X', '200ms,1s,2m')).toEqual([200, 1000, 120_000]);
    expect(parseDurations('X', '24d')).toEqual([2_073_600_000]);
  });

  it('bounds every duration in milliseconds by what a timer holds, and accepts that bound', () => {
    const unbounded = Object.values(SETTINGS).filter((s) => s.env.endsWith('_MS') && (s.max === undefined || s.max > MAX_DURATION_MS)).map((s) => s.env);
    expect(unbounded).toEqual([]);
    expect(loadConfig({ DATA_DIR: dataDir, WEBHOOK_TIMEOUT_MS: String(MAX_DURATION_MS) }).webhookTimeoutMs).toBe(MAX_DURATION_MS);
  });

  it('documents every setting in the README', () => {
    const readme = readFileSync(join(__dirname, '..', '..', '..', 'README.md'), 'utf8');
    const missing = Object.values(SETTINGS).map((s) => s.env).filter((env) => !readme.includes(`\`${env}\``));
    expect(missing).toEqual([]);
  });

  it("has the README's configuration table as the settings declare it (scripts/update-readme.js writes it)", () => {
    const readme = readFileSync(join(__dirname, '..', '..', '..', 'README.md'), 'utf8');
    const table = /<!-- config-table:start -->\n([\s\S]*?)<!-- config-table:end -->/.exec(readme)?.[1] ?? '';
    const rows = Object.values(SETTINGS).map((s) => `| \`${s.env}\` | ${s.default === undefined ? '—' : `\`${s.default}\``} | ${s.doc} |`);
    expect(table.trim().split('\n').slice(2)).toEqual(rows);
  });
});
