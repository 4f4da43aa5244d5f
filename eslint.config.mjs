// eslint (flat config): the recommended, type-unaware rules of eslint and typescript-eslint, with the exceptions
// below. Formatting is prettier's (npm run format); `npm run check` runs eslint, prettier --check and tsc --noEmit.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const unusedVars = {
  argsIgnorePattern: '^_',
  varsIgnorePattern: '^_',
  caughtErrorsIgnorePattern: '^_',
  destructuredArrayIgnorePattern: '^_',
  ignoreRestSiblings: true,
};

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'src/generated/', 'console/generated/', 'data/', '.cache/'] },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { globals: globals.node },
    rules: {
      // `import x = require()` is TypeScript's import of a CommonJS module (s3rver).
      '@typescript-eslint/no-require-imports': ['error', { allowAsImport: true }],
      // A leading underscore marks a parameter or binding that is unused on purpose (a route's body that must be
      // declared for its schema, a field left out of a copy).
      '@typescript-eslint/no-unused-vars': ['error', unusedVars],
      // The input sanitizers match control characters on purpose.
      'no-control-regex': 'off',
      // A `let` that a closure reads before it is assigned (a hook set up before the value exists) stays a `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      // Optional and heavy modules are loaded on first use (the cloud SDKs, STS, the jemalloc binding).
      '@typescript-eslint/no-require-imports': [
        'error',
        { allowAsImport: true, allow: ['^koffi$', '^@aws-sdk/client-sts$', '^\\./(s3|gcs|azure)-backend$'] },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      // Tests and benchmarks read the gateway's JSON answers, whose shape the test itself asserts.
      '@typescript-eslint/no-explicit-any': 'off',
      // Found when the linter came, to be fixed (then these lines go): imports and variables no test uses any
      // more, and statements made of comma expressions (`if (x) (types.add(x), (found = true))`).
      '@typescript-eslint/no-unused-vars': ['warn', unusedVars],
      '@typescript-eslint/no-unused-expressions': 'warn',
    },
  },
  {
    // The web console (docs/console.md): browser code, type-checked by its own tsconfig in scripts/build-console.js.
    files: ['console/**/*.ts', 'console/**/*.tsx'],
    languageOptions: { globals: globals.browser },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: globals.node },
  },
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs' },
    // The scripts are plain CommonJS run by node: require() is how they load modules.
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
