# source: https://github.com/ray-project/ray/pull/40940
# The fine-tuning loop summed outputs.loss into loss_sum, which kept every iteration's graph; fixed with .item().


def training_function(model, train_dataloader, optimizer, lr_scheduler):
    loss_sum = 0.0
    for step, batch in enumerate(train_dataloader):
        outputs = model(**batch)
        loss = outputs.loss
        loss_sum += loss  # expect: retained-graph
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
    return loss_sum / (step + 1)
