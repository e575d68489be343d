import { MigrationObject } from '@mikro-orm/core';
import { Migration20261122000000 } from './Migration20261122000000';
import { Migration20261123000000 } from './Migration20261123000000';
import { Migration20261123120000 } from './Migration20261123120000';
import { Migration20261123140000 } from './Migration20261123140000';
import { Migration20261123190000 } from './Migration20261123190000';
import { Migration20261123210000 } from './Migration20261123210000';
import { Migration20261124000000 } from './Migration20261124000000';
import { Migration20261125000000 } from './Migration20261125000000';
import { Migration20261126000000 } from './Migration20261126000000';
import { Migration20261127000000 } from './Migration20261127000000';
import { Migration20261128000000 } from './Migration20261128000000';
import { Migration20261129000000 } from './Migration20261129000000';
import { Migration20261129010000 } from './Migration20261129010000';
import { Migration20261130000000 } from './Migration20261130000000';
import { Migration20261130120000 } from './Migration20261130120000';
import { Migration20261201041500 } from './Migration20261201041500';

/** Every migration, oldest first. Add new ones at the end. */
export const MIGRATIONS: MigrationObject[] = [
  { name: 'Migration20261122000000', class: Migration20261122000000 },
  { name: 'Migration20261123000000', class: Migration20261123000000 },
  { name: 'Migration20261123120000', class: Migration20261123120000 },
  { name: 'Migration20261123140000', class: Migration20261123140000 },
  { name: 'Migration20261123190000', class: Migration20261123190000 },
  { name: 'Migration20261123210000', class: Migration20261123210000 },
  { name: 'Migration20261124000000', class: Migration20261124000000 },
  { name: 'Migration20261125000000', class: Migration20261125000000 },
  { name: 'Migration20261126000000', class: Migration20261126000000 },
  { name: 'Migration20261127000000', class: Migration20261127000000 },
  { name: 'Migration20261128000000', class: Migration20261128000000 },
  { name: 'Migration20261129000000', class: Migration20261129000000 },
  { name: 'Migration20261129010000', class: Migration20261129010000 },
  { name: 'Migration20261130000000', class: Migration20261130000000 },
  { name: 'Migration20261130120000', class: Migration20261130120000 },
  { name: 'Migration20261201041500', class: Migration20261201041500 },
];
