/** Longest timer interval (a year and a day), for sources and workflows alike; TIMER_MIN_INTERVAL_SECONDS stays under it. */
export const TIMER_MAX_INTERVAL_SECONDS = 366 * 86400;
