resource "ferry_consumer_group" "billing" {
  queue_id                         = ferry_queue.orders.id # a queue with consumer_groups_enabled = true
  display_name                     = "billing"
  filter                           = ":team = \"billing\" AND :amount > 100"
  dead_letter_queue_delivery_count = 3 # leave out to inherit the queue's
}
