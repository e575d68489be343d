export * from './common';
export * from './user.entity';
export * from './component.entity';
export * from './source.entity';
export * from './subscription.entity';
export * from './webhook.entity';
export * from './event-summary.entity';
export * from './workflow.entity';

import { ApiKey, Org, OrgMember, UsageDaily, UsageSeen, User } from './user.entity';
import { Component } from './component.entity';
import { Source } from './source.entity';
import { AutoSubscription, Subscription } from './subscription.entity';
import { Webhook, WebhookDelivery } from './webhook.entity';
import { EventSummary } from './event-summary.entity';
import { Workflow } from './workflow.entity';

export const ENTITIES = [User, ApiKey, Org, OrgMember, UsageDaily, UsageSeen, Component, Source, Subscription, AutoSubscription, Webhook, WebhookDelivery, EventSummary, Workflow];
