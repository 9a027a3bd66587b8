#!/usr/bin/env bash
# proposal_timeout.sh with the Redis candidate index in cc-api and the
# matchers (production's configuration): a proposal the matcher's sweep
# expires puts its accepters back into the index, so they are proposed
# again at once instead of hiding until their next heartbeat.
PROPOSAL_TIMEOUT_INDEX=1
source "$(dirname "$0")/proposal_timeout.sh"
