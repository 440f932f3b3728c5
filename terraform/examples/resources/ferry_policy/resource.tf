resource "ferry_policy" "orders_producers" {
  compartment_id = ferry_compartment.orders.id
  name           = "orders-producers"
  description    = "Producers publish to the order queues"
  statements = [
    "Allow group Producers to use queue-push in compartment orders",
    "Allow group Consumers to use queue-pull in compartment orders where target.queue.name = 'orders'",
  ]
}
