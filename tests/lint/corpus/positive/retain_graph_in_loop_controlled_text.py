# source: https://github.com/GBLin5566/toward-controlled-generation-of-text-pytorch/issues/9
# Following advice to set retain_graph=True on every backward makes memory blow up, even on GPU.


def train(encoder, generator, discriminator, loader, optimizers):
    for batch in loader:
        z = encoder(batch)
        recon_loss = generator.reconstruction_loss(z, batch)
        disc_loss = discriminator.loss(generator(z))
        for opt in optimizers:
            opt.zero_grad()
        recon_loss.backward(retain_graph=True)  # expect: retain-graph-in-loop
        disc_loss.backward(retain_graph=True)  # expect: retain-graph-in-loop
        for opt in optimizers:
            opt.step()
