data "ferry_queues" "orders" {
  compartment_id = ferry_compartment.orders.id
  display_name   = "orders" # optional
}

output "order_queue_ids" {
  value = data.ferry_queues.orders.queues[*].id
}
