data "ferry_consumer_groups" "orders" {
  queue_id = ferry_queue.orders.id
}

output "groups" {
  value = { for g in data.ferry_consumer_groups.orders.consumer_groups : g.display_name => g.filter }
}
