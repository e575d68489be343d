/** @type {import('jest').Config} */
module.exports = {
  rootDir: '.',
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
  testMatch: ['<rootDir>/apps/**/*.spec.ts', '<rootDir>/libs/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  moduleNameMapper: { '^@app/([a-z-]+)(/.*)?$': '<rootDir>/libs/$1/src$2' },
  // Test state (npm installs of components) and the build are not test sources.
  modulePathIgnorePatterns: ['<rootDir>/.data/', '<rootDir>/dist/'],
  testTimeout: 120000,
  maxWorkers: 2,
};
