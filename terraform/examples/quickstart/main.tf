# A worked example: a compartment for an order pipeline, its queue with a dead-letter queue and consumer groups,
# a filtered consumer group, a policy for its producers and consumers, and the data sources reading them back.
#
#   make run                                   # prints export FERRY_TOKEN=… (and serves on 127.0.0.1:8080)
#   make terraform-provider                    # builds bin/terraform-provider-ferry and bin/terraformrc
#   export TF_CLI_CONFIG_FILE=$PWD/bin/terraformrc FERRY_ENDPOINT=http://127.0.0.1:8080
#   export TF_VAR_compartment_id=<the tenancy's OCID>   # make run prints it
#   cd terraform/examples/quickstart && terraform apply

terraform {
  required_providers {
    ferry = {
      source = "ferry-mq/ferry"
    }
  }
}

provider "ferry" {} # FERRY_ENDPOINT and FERRY_TOKEN

variable "compartment_id" {
  description = "The OCID of the compartment to create the example's compartment in (the tenancy's OCID is its root)."
  type        = string
}

resource "ferry_compartment" "orders" {
  compartment_id = var.compartment_id
  name           = "orders"
  description    = "The order pipeline"
}

resource "ferry_queue" "orders" {
  compartment_id                   = ferry_compartment.orders.id
  display_name                     = "orders"
  visibility_in_seconds            = 60
  dead_letter_queue_delivery_count = 5
  consumer_groups_enabled          = true
  freeform_tags                    = { team = "orders" }
}

resource "ferry_consumer_group" "billing" {
  queue_id     = ferry_queue.orders.id
  display_name = "billing"
  filter       = ":team = \"billing\" AND :amount > 100"
}

resource "ferry_policy" "orders" {
  compartment_id = ferry_compartment.orders.id
  name           = "orders-pipeline"
  description    = "Producers publish to the order queue; consumers read it"
  statements = [
    "Allow group Producers to use queue-push in compartment orders",
    "Allow group Consumers to use queue-pull in compartment orders where target.queue.name = 'orders'",
  ]
}

data "ferry_consumer_groups" "orders" {
  queue_id   = ferry_queue.orders.id
  depends_on = [ferry_consumer_group.billing]
}

output "queue_id" {
  value = ferry_queue.orders.id
}

output "messages_endpoint" {
  value = ferry_queue.orders.messages_endpoint
}

output "consumer_groups" {
  value = sort(data.ferry_consumer_groups.orders.consumer_groups[*].display_name)
}
