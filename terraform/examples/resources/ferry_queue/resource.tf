resource "ferry_queue" "orders" {
  compartment_id                   = ferry_compartment.orders.id
  display_name                     = "orders"
  visibility_in_seconds            = 60
  dead_letter_queue_delivery_count = 5
  consumer_groups_enabled          = true
  freeform_tags                    = { team = "orders" }

  timeouts {
    delete = "30m" # deleting a deep queue takes a while
  }
}
